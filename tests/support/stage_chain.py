"""The stages `dvc repro <targets>` would run, run in this process: each stage's own entry point (`main([key])` of
pipeline.build_data, .tokenizer, .synthesize, .train, .evaluate, .report, .figure), reading the params file as DVC's command
does (CALM_PARAMS), in the order of the dependencies the stage maps declare (pipeline.params.stage_maps). What it leaves out is DVC itself
(hashing, the lock, skipping what is up to date) and a Python process per stage: tests/e2e/test_pipeline_smoke.py
proves that wiring once.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.layout import synthesized_dir
from pipeline.params import dump_params, stage_maps

ENV = {"WANDB_MODE": "disabled", "CALM_THREADS": "1", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def _needed_models(stages: dict, reports: list[str], figures: list[str]) -> list[str]:
    """`<world>/<model>` of every model the reports and figures read, in training order (each after what it needs),
    and `synthesize:<world>/<set>` before the first model that trains on that set; stages: the stage maps dvc.yaml
    iterates over."""
    metrics = [m for r in reports for m in stages["report"][r]["metrics"]]
    metrics += [m for f in figures for m in stages["figure"][f]["metrics"]]
    wanted = dict.fromkeys(f"{Path(m).parts[1]}/{Path(m).stem}" for m in metrics)  # reports/<world>/metrics/<m>.json
    synthesized = {str(synthesized_dir(v["world"], v["name"])): k for k, v in stages.get("synthesize", {}).items()}
    order: list[str] = []

    def visit(key: str) -> None:
        if key in order:
            return
        entry = stages["train"][key]
        for up in entry["upstream"]:   # models/<world>/<model>, the world's tokenizer, or a synthesized set's folder
            if up in synthesized:
                made_by = stages["synthesize"][synthesized[up]]["model"]   # models/<world>/<model>
                visit("/".join(Path(made_by).parts[1:3]))
                if f"synthesize:{synthesized[up]}" not in order:
                    order.append(f"synthesize:{synthesized[up]}")
                continue
            world, model = Path(up).parts[1:3]
            if model != "tokenizer" and f"{world}/{model}" != key:
                visit(f"{world}/{model}")
        order.append(key)

    for key in wanted:
        visit(key)
    return order


def run_stages(params: dict, where: Path, monkeypatch, reports=(), figures=(), params_file: str = "params.yaml",
               times: dict | None = None) -> list[str]:
    """Writes `params` to `where`/`params_file` and runs, with `where` as the working directory, the stages that
    `reports` and `figures` need: each world's data and tokenizer, every model they read trained then evaluated,
    then the reports and figures. Returns the keys of the models it trained; `times` collects seconds per stage."""
    from pipeline import build_data, evaluate, figure, report, synthesize, tokenizer, train

    monkeypatch.chdir(where)
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    dump_params(params, where / params_file)
    monkeypatch.setenv("CALM_PARAMS", str(where / params_file))
    stages = stage_maps(params)
    order = _needed_models(stages, list(reports), list(figures))
    models = [k for k in order if not k.startswith("synthesize:")]
    worlds = list(dict.fromkeys(k.split("/")[0] for k in models))
    steps = [(build_data.main, w) for w in worlds] + [(tokenizer.main, w) for w in worlds]
    steps += [(synthesize.main, k.removeprefix("synthesize:")) if k.startswith("synthesize:") else (train.main, k)
              for k in order]
    steps += [(evaluate.main, k) for k in models if k in stages["evaluate"]]
    steps += [(report.main, r) for r in reports] + [(figure.main, f) for f in figures]
    for main, key in steps:
        start = time.monotonic()
        try:
            main([key])
        except SystemExit as e:  # a stage's UserError: one line on stderr and exit 2, as under DVC
            pytest.fail(f"{main.__module__} {key} exited {e.code}")
        if times is not None:
            times[f"{main.__module__.split('.')[-1]}@{key}"] = time.monotonic() - start
    return models
