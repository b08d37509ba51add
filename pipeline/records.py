"""Sweep records made before records named the data and bases they were trained on (issue 29).

A report counts a sweep run only when its `bases` (pipeline.report.build_digests) are the current build's, so a
record written before that field existed is left out. It may be adopted when a rerun proves the current build is
the one it was trained on: rerun one recorded (model, seed) on the current build, in a sweep of its own name,

    python -m pipeline.sweep ablation=calm seed=1 sweep=verify report=false
    python -m pipeline.records adopt kv_arithmetic reports/kv_arithmetic/sweeps/verify/calm-seed1

and if the rerun's scores and its whole loss log equal the record's to the last digit (the same bases, data, code
and float path give the same bytes; other bases would not), every record of the world without bases gets the
current build's, with `bases_adopted` naming the run that proved it. Nothing else in a record changes.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_write_json
from pipeline.params import load_params

USAGE = "usage: python -m pipeline.records adopt <world> <verifying sweep run dir>"


def _scores(run: dict) -> dict:
    return {s: m["score"] for s, m in run["metrics"].items()}


def _losses(run: dict) -> list:
    return [list(x) for x in run["train_info"].get("loss_history") or []]


def adopt(params: dict, world: str, verifying_dir: Path) -> list[Path]:
    """Give every record of `world` without bases the current build's, once `verifying_dir` (a rerun of one of
    them on this build) proves they were trained on it. -> the records changed."""
    from pipeline.layout import RUN_FILE, sweeps_dir
    from pipeline.report import build_digests, run_digest

    if world not in (params.get("worlds") or {}):
        raise PipelineError(f"unknown world {world!r}: params.yaml declares {', '.join(params.get('worlds') or {})}")
    record = verifying_dir / RUN_FILE
    if not record.is_file():
        raise PipelineError(f"{record} not found: run the verifying sweep job first")
    verify = json.loads(record.read_text())
    name, seed = verify["model"], verify["seed"]
    if verify.get("digest") != run_digest(params, world, name):
        raise PipelineError(f"{record} was made under another conf than params.yaml's")
    bases = build_digests(params, world, name)
    if bases is None:
        raise PipelineError(f"world {world} is not built here: adopt on the build the verifying run was made on")
    if verify.get("bases") not in (None, bases):
        raise PipelineError(f"{record} was trained on other bases than this build's")
    legacy = [p for p in sorted(sweeps_dir(world).glob(f"*/*/{RUN_FILE}"))
              if p.resolve() != record.resolve() and "bases" not in json.loads(p.read_text())]
    twins = [p for p in legacy if (lambda r: r["model"] == name and r["seed"] == seed
                                   and r.get("digest") == verify["digest"])(json.loads(p.read_text()))]
    if not twins:
        raise PipelineError(f"no record of {name} seed {seed} without bases to compare {record} with")
    original = json.loads(twins[0].read_text())
    if _scores(original) != _scores(verify) or _losses(original) != _losses(verify) \
            or original["train_info"].get("train_loss") != verify["train_info"].get("train_loss"):
        raise PipelineError(f"{record} does not reproduce {twins[0]} (scores {_scores(verify)} vs {_scores(original)}): "
                            f"this build is not the one the records were trained on; rerun the sweeps instead")
    proof = {"verified_by": f"{name} seed {seed} retrained on this build: same scores and loss log as {twins[0]}"}
    adopted = []
    for path in legacy:
        run = json.loads(path.read_text())
        own = build_digests(params, world, run["model"])
        # the rerun proves the bases it was trained on; a record built on any other model stays out
        if own is not None and set(own) <= set(bases):
            atomic_write_json(path, {**run, "bases": own, "bases_adopted": proof})
            adopted.append(path)
    return adopted


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] != "adopt":
        raise PipelineError(USAGE)
    changed = adopt(load_params(), argv[1], Path(argv[2]))
    print(f"{len(changed)} record(s) of {argv[1]} now name this build's bases", file=sys.stderr)


if __name__ == "__main__":
    main()
