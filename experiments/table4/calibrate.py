"""Calibration runs of the code world (Table 4) on its DEV splits, through the stages' own functions.

    CALM_THREADS=1 python experiments/table4/calibrate.py WORKDIR [--train vanilla,mA,mB,calm] \
        [--evaluate mA,mB,calm] [overrides ...]

Composes conf/ (world=[code], the default preset, then the Hydra overrides given), points benchmarks_dir at
the repository's ../shared/benchmarks, and replaces the evaluation sets by their dev twins (cc_dev, t2c_dev,
c2t_dev, cc_stdlib_dev: never tune on test rows); `--test` scores the test sets, for the final figures of
settings already frozen. In WORKDIR (its own data/, models/, reports/) it builds the
data when the data conf changed, trains each model named by --train unless the same conf (its own, the
models it builds on, the data's) already trained it there, evaluates the models named by --evaluate, and
appends one line per model to WORKDIR/results.jsonl: the overrides, the dev scores, training seconds.
`--models-from CHECKOUT` scores, instead, the data and models that `dvc repro` built in CHECKOUT (linked into
WORKDIR, never rebuilt or trained; the composed models conf must equal CHECKOUT's params.yaml): the dev figures
of the very models a published test-row table comes from.
docs/table4-calibration-log.md records what was tried with these figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEV = {"cc_test": "cc_dev", "t2c_test": "t2c_dev", "c2t_test": "c2t_dev", "cc_stdlib_test": "cc_stdlib_dev"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--train", default="")
    ap.add_argument("--evaluate", default="")
    ap.add_argument("--sets", default="cc_test,t2c_test,c2t_test", help="test sets whose dev twins are scored")
    ap.add_argument("--test", action="store_true",
                    help="score the test sets themselves (only once the settings are frozen: the final figures)")
    ap.add_argument("--models-from", metavar="CHECKOUT",
                    help="score the data and models `dvc repro` built in this checkout (no building or training)")
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_intermixed_args()
    os.environ.setdefault("WANDB_MODE", "disabled")

    from pipeline.io import fingerprint
    from pipeline.params import compose_params, dump_params
    from pipeline.training.lineage import upstream_models

    params = compose_params(["world=[code]", *a.overrides])
    w = params["worlds"]["code"]
    bench = Path(w["data"]["benchmarks_dir"])
    if not bench.is_absolute():
        w["data"]["benchmarks_dir"] = str((ROOT / bench).resolve())
    wanted = a.sets.split(",")
    w["evaluation"]["sets"] = {(s if a.test else DEV[s]): w["evaluation"]["sets"][s] for s in wanted}
    work = Path(a.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)
    dump_params(params, "params.yaml")
    os.environ["CALM_PARAMS"] = str(work / "params.yaml")

    from pipeline.build_data import build_world_data
    from pipeline.evaluate import evaluate
    from pipeline.tokenization import world_tokenizer
    from pipeline.train import train

    data_key = fingerprint({"data": w["data"], "seed": params["seed"]})
    marker = Path("data/code/.calibration_key")
    if a.models_from:
        _link_checkout(Path(a.models_from).resolve(), w, a.train)
    elif not marker.exists() or marker.read_text() != data_key:
        t0 = time.time()
        build_world_data(params, "code")
        marker.write_text(data_key)
        tok = world_tokenizer(params, "code")
        Path("models/code/tokenizer").mkdir(parents=True, exist_ok=True)
        tok.save_pretrained("models/code/tokenizer")
        print(f"data built in {time.time() - t0:.0f} s", file=sys.stderr)

    models = w["models"]
    trained = {}
    for name in filter(None, a.train.split(",")):
        related = {u: models[u] for u in upstream_models("code", name, models[name], models)}
        key = fingerprint({"cfg": models[name], "related": related, "data": data_key,
                           "upstream_keys": {u: _key(u) for u in related}})
        if _key(name) == key:
            print(f"{name}: same conf already trained here, kept", file=sys.stderr)
            continue
        t0 = time.time()
        info = train(params, f"code/{name}")
        trained[name] = {"seconds": round(time.time() - t0, 1), "train_loss": info.get("train_loss")}
        Path(f"models/code/{name}/.calibration_key").write_text(key)
        print(f"{name}: trained in {trained[name]['seconds']} s, loss {info.get('train_loss')}", file=sys.stderr)
    for name in filter(None, a.evaluate.split(",")):
        t0 = time.time()
        metrics = evaluate(params, f"code/{name}")
        line = {"model": name, "overrides": a.overrides, "split": "test" if a.test else "dev", "scores": {s: m["score"] for s, m in metrics.items()},
                "by_group": {s: m.get("by_group") for s, m in metrics.items()},
                "eval_seconds": round(time.time() - t0, 1), **({"train": trained[name]} if name in trained else {})}
        with open("results.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps({"model": name, "scores": line["scores"], **({"train": trained[name]} if name in trained else {})}))


def _link_checkout(checkout: Path, world_cfg: dict, train: str) -> None:
    """Links CHECKOUT's data/code and models/code into the work directory (the cwd), after checking that they
    were built under the models conf composed here; exits with one line otherwise."""
    import yaml

    if train:
        sys.exit("--models-from scores models trained elsewhere: drop --train")
    params_file = checkout / "params.yaml"
    if not params_file.exists():
        sys.exit(f"--models-from: {params_file} not found")
    theirs = (yaml.safe_load(params_file.read_text()).get("worlds") or {}).get("code")
    if theirs is None:
        sys.exit(f"--models-from: {params_file} has no code world (compose it with world=[code])")
    if theirs["models"] != world_cfg["models"] or theirs["data"] != world_cfg["data"] | {"benchmarks_dir": theirs["data"]["benchmarks_dir"]}:
        sys.exit(f"--models-from: {params_file}'s code data or models conf differs from the one composed here")
    for sub in ("data/code", "models/code"):
        target, link = checkout / sub, Path(sub)
        if not target.is_dir():
            sys.exit(f"--models-from: {target} missing (run dvc repro there first)")
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            sys.exit(f"--models-from: {link.resolve()} exists: use a new WORKDIR")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)


def _key(name: str) -> str | None:
    p = Path(f"models/code/{name}/.calibration_key")
    return p.read_text() if p.exists() else None


if __name__ == "__main__":
    main()
