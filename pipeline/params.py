"""params.yaml: conf/ composed by Hydra, the one file every stage reads.

    python -m pipeline.params [overrides...]     # e.g. preset=micro, world=[kv_arithmetic,copy]
    python -m pipeline.params --check            # exit 2 if params.yaml differs from conf/

The same composition as DVC's Hydra integration (`dvc exp run -S preset=paper`), which also finds the
pipeline's resolver (pipeline/stages.py) through hydra_plugins/.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from pipeline.checks import check_params
from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
PARAMS_FILE = "params.yaml"


def load_params(path: str | os.PathLike | None = None) -> dict:
    import yaml

    p = Path(path or os.environ.get("CALM_PARAMS", PARAMS_FILE))
    if not p.exists():
        raise PipelineError(f"{p} not found: run `make params` (composes conf/ into params.yaml)")
    with open(p) as f:
        return check_params(yaml.safe_load(f))


def compose_params(overrides: Iterable[str] = (), conf_dir: str | os.PathLike | None = None) -> dict:
    """Compose conf/config.yaml with Hydra (as DVC's Hydra integration does) into a plain dict."""
    import yaml
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from pipeline.stages import register_resolver

    register_resolver()
    conf_dir = Path(conf_dir or ROOT / "conf").resolve()
    overrides = list(overrides)
    presets = sorted(p.stem for p in (conf_dir / "preset").glob("*.yaml"))
    for o in overrides:
        if o.split("=", 1)[0].lstrip("+~") == "preset":
            name = o.split("=", 1)[1] if "=" in o else ""
            if name not in presets:
                raise PipelineError(f"unknown preset {name!r}: choose one of {', '.join(presets)}")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(config_name="config", overrides=overrides)
            params = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException, yaml.YAMLError) as e:
        cause = e.__cause__ if isinstance(e.__cause__, PipelineError) else None
        text = str(cause or e).strip()
        if isinstance(e, yaml.YAMLError):  # the parser's message spans lines: what it expected, and where
            first = " ".join(line.strip() for line in text.splitlines())
        else:
            first = text.splitlines()[0] if text else type(e).__name__
        raise PipelineError(f"cannot compose conf/: {first}") from None
    finally:
        GlobalHydra.instance().clear()
    return check_params(params)


def dump_params(params: dict, path: str | os.PathLike = PARAMS_FILE) -> None:
    import yaml

    text = "# GENERATED from conf/ by `make params` (or DVC's Hydra integration): do not edit by hand.\n"
    text += yaml.safe_dump(params, sort_keys=False, default_flow_style=None, width=100)
    atomic_write_text(path, text)


@cli
def main(argv: list[str]) -> None:
    check = "--check" in argv
    overrides = [a for a in argv if a != "--check"]
    params = compose_params(overrides)
    if check:
        if load_params(PARAMS_FILE) != params:
            raise PipelineError("params.yaml differs from conf/: run `make params`")
        print("params.yaml matches conf/")
        return
    dump_params(params, PARAMS_FILE)
    print(f"wrote {PARAMS_FILE} (preset={params['preset']})")


if __name__ == "__main__":
    main()
