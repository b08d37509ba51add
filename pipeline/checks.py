"""Checks of the values in params.yaml that would otherwise fail deep inside a stage (numpy's seeding, after DVC
has already removed the stage's outputs): run where params are composed (pipeline.params, the DAG resolver that
DVC's Hydra integration calls) and where a stage reads them (load_params)."""
from __future__ import annotations

from pipeline.errors import PipelineError


def check_seed(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PipelineError(f"{where} must be an integer >= 0, not {value!r}")
    return value


def check_params(params: dict) -> dict:
    """params, or one PipelineError naming the first bad value: the global seed and every model's own seed."""
    if "seed" in params:
        check_seed(params["seed"], "seed")
    for world, wcfg in (params.get("worlds") or {}).items():
        for name, mcfg in ((wcfg or {}).get("models") or {}).items() if isinstance(wcfg, dict) else ():
            if isinstance(mcfg, dict) and mcfg.get("seed") is not None:
                check_seed(mcfg["seed"], f"worlds.{world}.models.{name}.seed")
    return params
