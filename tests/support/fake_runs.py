"""Fake outputs of a trained and evaluated model, as the report stage reads them: the DVC default cell (metrics beside
the model's train_info.json) for seed 0, a sweep run (run.json) for any other seed. For report tests that must not
train anything."""
import json
from pathlib import Path

from pipeline.report import build_digests, run_digest


def write_fake_run(root: Path, params: dict, world: str, name: str, seed: int, metrics: dict, info: dict,
                   sweep: str = "s") -> None:
    if seed == 0:
        (root / "reports" / world / "metrics").mkdir(parents=True, exist_ok=True)
        (root / "reports" / world / "metrics" / f"{name}.json").write_text(json.dumps({"metrics": metrics}))
        (root / "models" / world / name).mkdir(parents=True)
        (root / "models" / world / name / "train_info.json").write_text(json.dumps(info))
        return
    run = root / "reports" / world / "sweeps" / sweep / f"{name}-seed{seed}"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"model": name, "seed": seed, "digest": run_digest(params, world, name),
                                              "bases": build_digests(params, world, name, root), "metrics": metrics, "train_info": dict(info, seed=seed)}))
