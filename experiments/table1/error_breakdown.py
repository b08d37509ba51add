"""Where a composition's KV-Arithmetic answers go wrong: the copy of mA's values or mB's arithmetic after it.

Usage, in a directory after `dvc repro` (or an evaluate stage) has written a model's predictions:

    python experiments/table1/error_breakdown.py [PREDICTIONS_JSONL]

PREDICTIONS_JSONL  an evaluate stage's predictions (default reports/kv_arithmetic/predictions/calm.jsonl)

For each scratchpad KV-Arithmetic set (kv_math_test: held-out keys; kv_math_held_in_test) prints the rows that are
  correct           the whole target right
  arith_wrong       the substituted expression (up to the last "=") right, the value after it wrong: mB's arithmetic
  first_wrong, second_wrong, both_wrong
                    a value of the substituted expression wrong (the copy of mA's substitution)
  malformed         the substituted part is not two numbers joined by an operator
and `arith_given_subs`: the share of rows with a right substituted expression whose value is right, to compare
with mB's own ceiling (experiments/table1/anchor_prefix_check.py, `kvmath_teacher_forced`).
Two-key expressions only (the cpu preset's n_terms [2, 2]). Reads JSON only (no torch).
"""
import argparse
import json
import re
from collections import Counter


def breakdown(rows: list[dict]) -> dict:
    c = Counter()
    for r in rows:
        target_subs = r["target"].rsplit("=", 1)[0]
        graded = r.get("graded", r["prediction"])
        pred_subs = graded.rsplit("=", 1)[0] if "=" in graded else graded
        if r["correct"]:
            c["correct"] += 1
        elif pred_subs == target_subs:
            c["arith_wrong"] += 1
        else:
            want = re.split(r"[-+x]", target_subs)
            got = re.split(r"[-+x]", pred_subs)
            if len(got) != len(want):
                c["malformed"] += 1
            elif got[0] != want[0] and got[1] != want[1]:
                c["both_wrong"] += 1
            elif got[0] != want[0]:
                c["first_wrong"] += 1
            else:
                c["second_wrong"] += 1
    subs_right = c["correct"] + c["arith_wrong"]
    out = {"n": len(rows), **c}
    out["arith_given_subs"] = round(100 * c["correct"] / subs_right, 1) if subs_right else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions", nargs="?", default="reports/kv_arithmetic/predictions/calm.jsonl")
    args = parser.parse_args()
    with open(args.predictions) as f:
        preds = [json.loads(line) for line in f]
    for name in ("kv_math_test", "kv_math_held_in_test"):
        print(name, breakdown([p for p in preds if p["set"] == name]))


if __name__ == "__main__":
    main()
