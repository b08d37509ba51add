"""Where a composition's KV-Arithmetic answers go wrong: the copy of mA's values or mB's arithmetic after it.

Usage, in a directory after `dvc repro` (or an evaluate stage) has written a model's predictions:

    python experiments/table1/error_breakdown.py [PREDICTIONS_JSONL]
    python experiments/table1/error_breakdown.py --by-key PREDICTIONS_JSONL [PREDICTIONS_JSONL ...]

PREDICTIONS_JSONL  an evaluate stage's predictions (default reports/kv_arithmetic/predictions/calm.jsonl), or a
                   sweep run's (reports/kv_arithmetic/sweeps/<sweep>/calm-seed<N>/reports/kv_arithmetic/predictions/)

For each scratchpad KV-Arithmetic set (kv_math_test: held-out keys; kv_math_held_in_test) prints the rows that are
  correct           the whole target right
  arith_wrong       the substituted expression (up to the last "=") right, the value after it wrong: mB's arithmetic
  first_wrong, second_wrong, both_wrong
                    a value of the substituted expression wrong (the copy of mA's substitution)
  malformed         the substituted part is not two numbers joined by an operator
and `arith_given_subs`: the share of rows with a right substituted expression whose value is right, to compare
with mB's own ceiling (experiments/table1/anchor_prefix_check.py, `kvmath_teacher_forced`).
`--by-key` pools the held-out rows of several runs (e.g. one recipe's seeds) and counts each wrong copy of a key's
value by its key and by its kind: `shorter` (a prefix of the value: a digit dropped, or nothing), `longer` (the
value and more digits), `other` (another number): whether a few keys hold the errors, and whether the copy
misjudges where a value ends or reads another value.
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


def wrong_copies(rows: list[dict]) -> Counter:
    """(key, value, kind) -> how many times a held-out row copied that key's value wrong; kinds as in --by-key."""
    c = Counter()
    for r in rows:
        if r["correct"]:
            continue
        keys = r["prompt"].rstrip("=").split("+")
        want = r["target"].rsplit("=", 1)[0].split("+")
        graded = r.get("graded", r["prediction"])
        got = (graded.rsplit("=", 1)[0] if "=" in graded else graded).split("+") + ["", ""]
        for key, value, copy in zip(keys, want, got):
            if copy != value:
                kind = "shorter" if value.startswith(copy) else "longer" if copy.startswith(value) else "other"
                c[key, value, kind] += 1
    return c


def by_key(paths: list[str]) -> None:
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append([p for p in map(json.loads, f) if p["set"] == "kv_math_test"])
    copies = Counter()
    for rows in runs:
        copies.update(wrong_copies(rows))
    total = sum(copies.values())
    kinds, keys = Counter(), Counter()
    for (key, value, kind), n in copies.items():
        kinds[kind] += n
        keys[key, value] += n
    print(f"{len(runs)} runs, {sum(len(r) for r in runs)} held-out rows, {total} wrong copies: "
          + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    top = keys.most_common(4)
    print(f"{len(keys)} keys; the 4 most often wrong hold {sum(n for _, n in top)} of {total}:")
    for (key, value), n in keys.most_common(12):
        detail = ", ".join(f"{kind} {copies[key, value, kind]}" for kind in ("shorter", "longer", "other")
                           if copies[key, value, kind])
        print(f"  {key} = {value}: {n} ({detail})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions", nargs="*", default=["reports/kv_arithmetic/predictions/calm.jsonl"])
    parser.add_argument("--by-key", action="store_true", help="pool the runs' held-out rows and count wrong copies by key")
    args = parser.parse_args()
    if args.by_key:
        by_key(args.predictions)
        return
    if len(args.predictions) != 1:
        parser.error("one predictions file (several only with --by-key)")
    with open(args.predictions[0]) as f:
        preds = [json.loads(line) for line in f]
    for name in ("kv_math_test", "kv_math_held_in_test"):
        print(name, breakdown([p for p in preds if p["set"] == name]))


if __name__ == "__main__":
    main()
