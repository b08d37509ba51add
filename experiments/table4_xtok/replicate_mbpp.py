"""A replication of code_xtok's MBPP comparison on MBPP test problems no stage, choice or report has used: the
items right after the dev slice (t2c_test takes the first `benchmark_limits.t2c_test`, t2c_dev the next
`benchmark_dev.t2c_dev`; these are the next N, default 100), built by the world's own `benchmark_sets` and graded as
t2c_test is (3-shot, greedy, the sandbox's pass@1). D_C (MBPP's train split) already leaves out every row that
near-copies any MBPP test item, these included (`mbpp_train_rows`).

    python experiments/table4_xtok/replicate_mbpp.py run <label> <model folder> [--items N]
        <label>: the world's model name, or <name>-seed<N> for a sweep's run of it (e.g. mB, mA, calm-seed1): the
        name decides the tokenizer, as the evaluate stage does (the world's, or the model's own where it declares one)
    python experiments/table4_xtok/replicate_mbpp.py summary [--reference mB]

`run` writes reports/code_xtok/replication/<label>.json (score, per-item verdicts, seconds) and its predictions;
`summary` prints each label's pass@1 and the paired tests the report uses against the reference (exact McNemar for
each run; the exact sign-flip test over the runs whose labels share a prefix before `-seed`, e.g. calm-seed0..2).
"""
from __future__ import annotations

import json
import sys
import time
from fractions import Fraction
from pathlib import Path

import pipeline  # noqa: F401  (first: pins the float path)

WORLD = "code_xtok"
OUT = Path("reports") / WORLD / "replication"


def replication_rows(params: dict, items: int) -> list[dict]:
    """MBPP test items after t2c_test's and t2c_dev's, as the world builds t2c_test's rows."""
    from pipeline.worlds.code.real_benchmarks import benchmark_sets

    cfg = dict(params["worlds"][WORLD]["data"])
    start = int(cfg["benchmark_limits"]["t2c_test"]) + int((cfg.get("benchmark_dev") or {}).get("t2c_dev", 0))
    cfg.update(benchmark_offsets={**(cfg.get("benchmark_offsets") or {}), "t2c_test": start},
               benchmark_limits={**cfg["benchmark_limits"], "t2c_test": items}, benchmark_dev={})
    return benchmark_sets(cfg)["t2c_test"]


def run(label: str, folder: str, items: int) -> None:
    from pipeline.evaluate import evaluate_sets, evaluation_model
    from pipeline.io import atomic_write_json, atomic_write_jsonl
    from pipeline.params import load_params
    from pipeline.training.trainer import set_threads

    params = load_params()
    set_threads(params.get("runtime") or {})
    name = label.split("-seed")[0]
    if name not in params["worlds"][WORLD]["models"]:
        raise SystemExit(f"replicate_mbpp: label {label!r} names no model of {WORLD} "
                         f"({', '.join(params['worlds'][WORLD]['models'])}; a sweep's run: <name>-seed<N>)")
    if not Path(folder, "pipeline_kind").is_file():
        raise SystemExit(f"replicate_mbpp: {folder} is not a model folder a stage saved (no pipeline_kind)")
    rows = replication_rows(params, items)
    ecfg = dict(params["worlds"][WORLD]["evaluation"])
    ecfg["sets"] = {"t2c_replication": dict(ecfg["sets"]["t2c_test"], per_item=True)}
    t0 = time.time()
    model, tokenizer = evaluation_model(params, WORLD, name, folder)
    metrics, records = evaluate_sets(model, tokenizer, {"t2c_replication": rows}, ecfg)
    m = metrics["t2c_replication"]
    atomic_write_json(OUT / f"{label}.json", {"label": label, "model": folder, "items": [r["id"] for r in rows],
                                              "score": m["score"], "n": m["n"], "seconds": round(time.time() - t0, 1),
                                              "passed": [bool(r["passed"][0]) for r in records]})
    atomic_write_jsonl(OUT / f"{label}.predictions.jsonl", records)
    print(f"{label}: pass@1 {m['score']:.1f} on MBPP {rows[0]['id']}..{rows[-1]['id']} (n={m['n']})")


def summary(reference: str) -> None:
    from pipeline.report_cells import mcnemar_exact, sign_flip_exact

    runs = {p.stem: json.loads(p.read_text()) for p in sorted(OUT.glob("*.json"))}
    if reference not in runs:
        raise SystemExit(f"replicate_mbpp: no run labelled {reference!r} in {OUT} (run it first)")
    ref = runs[reference]
    for label, r in runs.items():
        if r["items"] != ref["items"]:
            raise SystemExit(f"replicate_mbpp: {label} was run on other items than {reference}")
        line = f"{label}: pass@1 {r['score']:.1f} (n={r['n']})"
        if label != reference:
            b, c, p = mcnemar_exact([int(x) for x in r["passed"]], [int(x) for x in ref["passed"]])
            line += f"; vs {reference}: {label} alone solves {b}, {reference} alone {c}, exact McNemar p = {p:.3g}"
        print(line)
    families: dict[str, list[dict]] = {}
    for label, r in runs.items():
        if "-seed" in label:
            families.setdefault(label.split("-seed")[0], []).append(r)
    for family, members in families.items():
        if len(members) < 2:
            continue
        rates = [Fraction(sum(m["passed"][i] for m in members), len(members)) for i in range(len(ref["passed"]))]
        differences = [rate - int(x) for rate, x in zip(rates, ref["passed"])]
        higher, lower = sum(d > 0 for d in differences), sum(d < 0 for d in differences)
        mean = sum(m["score"] for m in members) / len(members)
        print(f"{family} ({len(members)} runs, mean pass@1 {mean:.1f}) vs {reference}: higher on {higher} items, "
              f"lower on {lower}, exact sign-flip p = {sign_flip_exact(differences):.3g}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["run"] and len(argv) in (3, 5) and (len(argv) == 3 or argv[3] == "--items"):
        run(argv[1], argv[2], int(argv[4]) if len(argv) == 5 else 100)
    elif argv[:1] == ["summary"] and len(argv) in (1, 3) and (len(argv) == 1 or argv[1] == "--reference"):
        summary(argv[2] if len(argv) == 3 else "mB")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
