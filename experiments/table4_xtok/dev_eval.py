"""A code_xtok model on the world's DEV slices (HumanEval and MBPP items right after the test subsets:
`benchmark_dev`), or on any of its sets, graded as the stages grade the test sets: what choices (steps, connections,
learning rate) may be made on, never the test problems. Writes reports/code_xtok/dev/<model>.json (scores, per-item
verdicts, seconds) and its predictions beside it.

    python experiments/table4_xtok/dev_eval.py <model> [set[:first N] ...]     # default: cc_dev t2c_dev
    e.g.  python experiments/table4_xtok/dev_eval.py calm cc_dev:16 bpb_prose_test
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: pins the float path)

WORLD = "code_xtok"
DEV_CONF = {"cc_dev": "cc_test", "t2c_dev": "t2c_test"}   # a dev slice is graded as its test set


def main(argv: list[str]) -> None:
    from pipeline.evaluate import evaluate_sets
    from pipeline.io import atomic_write_json, atomic_write_jsonl, read_jsonl
    from pipeline.params import load_params
    from pipeline.layout import model_dir, tokenizer_dir
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model
    from pipeline.training.lineage import declared_tokenizer
    from pipeline.training.trainer import set_threads

    if not argv:
        raise SystemExit(__doc__)
    name, wanted = argv[0], argv[1:] or ["cc_dev", "t2c_dev"]
    params = load_params()
    set_threads(params.get("runtime") or {})
    ecfg = dict(params["worlds"][WORLD]["evaluation"])
    sets, confs = {}, {}
    for spec in wanted:
        s, _, n = spec.partition(":")
        rows = read_jsonl(Path("data") / WORLD / f"{s}.jsonl")
        sets[s] = rows[:int(n)] if n else rows
        confs[s] = dict(ecfg["sets"][DEV_CONF.get(s, s)], per_item=True) if DEV_CONF.get(s, s) in ecfg["sets"] \
            and ecfg["sets"][DEV_CONF.get(s, s)]["metric"] == "pass_at_k" else ecfg["sets"][DEV_CONF.get(s, s)]
    ecfg["sets"] = confs
    own = declared_tokenizer(params, WORLD, name) is not None
    t0 = time.time()
    tokenizer = load_tokenizer(model_dir(WORLD, name) if own else tokenizer_dir(WORLD))
    model = load_trained_model(model_dir(WORLD, name)).eval()
    load_s = time.time() - t0
    metrics, records = evaluate_sets(model, tokenizer, sets, ecfg)
    out = Path("reports") / WORLD / "dev"
    atomic_write_json(out / f"{name}.json", {"model": name, "load_seconds": round(load_s, 1), "metrics": metrics})
    atomic_write_jsonl(out / f"{name}.predictions.jsonl", records)
    print(json.dumps({s: {k: m[k] for k in ("score", "n", "seconds")} for s, m in metrics.items()}), "load", round(load_s, 1))


if __name__ == "__main__":
    main(sys.argv[1:])
