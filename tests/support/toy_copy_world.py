"""A toy world for the tests: copy a short string. It exists to show that a world is a module plus a conf/
entry (tests/e2e/test_pipeline_smoke.py writes conf/world/copy.yaml into a copy of the repository)."""
from pathlib import Path

import numpy as np

from pipeline.io import atomic_write_jsonl

LETTERS = "abcdefgh"


def vocabulary(cfg: dict) -> list[str]:
    return list(LETTERS + ">")


def build(cfg: dict, out_dir: Path, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(list(LETTERS), size=cfg["length"])) for _ in range(cfg["n"])]
    rows = [{"prompt": w + ">", "target": w, "group": "even" if i % 2 == 0 else "odd"} for i, w in enumerate(words)]
    split = len(rows) * 3 // 4
    atomic_write_jsonl(Path(out_dir) / "train.jsonl", rows[:split])
    atomic_write_jsonl(Path(out_dir) / "test.jsonl", rows[split:])
    atomic_write_jsonl(Path(out_dir) / "test_chrf.jsonl", rows[split:])
    return {"n_train": split, "n_test": len(rows) - split}


def report_lines(cfg: dict, summary: dict, world_cfg: dict | None = None) -> list[str]:
    return [f"copy {cfg['length']}-letter strings; {summary['n_train']} training rows"]
