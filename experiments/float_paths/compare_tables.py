"""Tables built on two float paths, cell by cell (issue 29, docs/reproducibility.md "Tables 2-5 on a second float
path"): for each cell of the published reports/<table>.csv, its mean and std over seeds, the other checkout's value,
and, where the published cell has >= 2 seeds, whether the other value lies within 2 std of the mean.

    python experiments/float_paths/compare_tables.py <published checkout> <other checkout> table2,table3,table4,table5 \
        [--worlds languages,code]
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path


def cells(root: Path, table: str) -> dict[tuple[str, str, str], dict]:
    with open(root / "reports" / f"{table}.csv") as f:
        return {(r["world"], r["task"], r["model"]): r for r in csv.DictReader(f)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path)
    ap.add_argument("other", type=Path)
    ap.add_argument("tables")
    ap.add_argument("--worlds", default=None, help="only these worlds' blocks (comma-separated)")
    args = ap.parse_args()
    worlds = set(args.worlds.split(",")) if args.worlds else None
    for table in args.tables.split(","):
        published, other = cells(args.published, table), cells(args.other, table)
        print(f"## {table}")
        inside = outside = 0
        for key, p in published.items():
            if (worlds and key[0] not in worlds) or key not in other or p["ours"] in ("", None):
                continue
            mean, value = float(p["ours"]), float(other[key]["ours"])
            std = float(p["std"]) if p["std"] not in ("", None) else None
            seeds = int(p["n_seeds"] or 1)
            verdict = ""
            if std is not None and seeds >= 2:
                within = abs(value - mean) <= 2 * std + 1e-9
                inside, outside = inside + within, outside + (not within)
                verdict = "within 2 std" if within else "outside"
            spread = f" ± {std:5.2f} ({seeds} seeds)" if std is not None else " " * 17
            print(f"{key[0]:14s} {key[1][:48]:48s} {key[2]:12s} published {mean:8.2f}{spread}  other {value:8.2f} "
                  f"({other[key]['n_seeds']} seeds)  {value - mean:+7.2f} {verdict}")
        print(f"cells with a published seed spread: {inside} within 2 std, {outside} outside")


if __name__ == "__main__":
    main()
