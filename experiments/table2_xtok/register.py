"""Does a model's translation take D_C's register? D_C's English targets are GSM8K sentences (back-translated into
the languages by mA), a third of them word-problem questions; FLORES's English is news and Wikipedia prose, with
no question among the test subset's references. Counts, per model, the FLORES test predictions that are questions
(ending in "?") and "how many / how much" questions, beside the same counts over D_C's targets and the references.
Reads what `make table2-xtok` wrote; trains and tunes nothing.

    python experiments/table2_xtok/register.py [--world languages_xtok] [--data synthesized/bt_english]
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

HOW_MANY = re.compile(r"\bhow (many|much)\b", re.IGNORECASE)


def counts(texts: list[str]) -> tuple[int, int, int]:
    """-> (texts, questions, how-many/much questions)"""
    return (len(texts), sum(t.strip().endswith("?") for t in texts), sum(bool(HOW_MANY.search(t)) for t in texts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", default="languages_xtok")
    ap.add_argument("--data", default="synthesized/bt_english", help="D_C as the world's conf names it")
    ap.add_argument("--set", default="flores_test")
    args = ap.parse_args()
    world = args.world
    if args.data.startswith("synthesized/"):
        rows_file = Path(f"data/{world}.synthesized/{args.data.split('/', 1)[1]}/rows.jsonl")
    else:
        rows_file = Path(f"data/{world}/{args.data}.jsonl")
    predictions = sorted(Path(f"reports/{world}/predictions").glob("*.jsonl"))
    if not rows_file.is_file() or not predictions:
        raise SystemExit(f"error: {rows_file} or reports/{world}/predictions/*.jsonl missing: build the world first")
    table = [("D_C targets", counts([json.loads(line)["target"] for line in open(rows_file)]))]
    references = None
    for path in predictions:
        rows = [r for r in map(json.loads, open(path)) if r["set"] == args.set]
        references = references or [r["target"] for r in rows]
        table.append((f"{path.stem} predictions", counts([r["prediction"] for r in rows])))
    table.insert(1, (f"{args.set} references", counts(references or [])))
    print(f"| texts | n | questions | how many / how much |\n|---|---|---|---|")
    for name, (n, questions, how) in table:
        print(f"| {name} | {n} | {questions} ({100 * questions / max(n, 1):.0f}%) | {how} ({100 * how / max(n, 1):.0f}%) |")


if __name__ == "__main__":
    main()
