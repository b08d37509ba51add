"""Two code_xtok models on the dev slice: pass@1 on the problems both were run on, and the exact McNemar test over
them (pipeline.report.mcnemar_exact), from experiments/table4_xtok/dev_eval.py's files.

    python experiments/table4_xtok/dev_compare.py calm mB
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pipeline  # noqa: F401


def main(a: str, b: str) -> None:
    from pipeline.report import mcnemar_exact

    read = lambda m: json.loads((Path("reports/code_xtok/dev") / f"{m}.json").read_text())["metrics"]  # noqa: E731
    ma, mb = read(a), read(b)
    for s in sorted(set(ma) & set(mb)):
        ia, ib = ma[s].get("per_item"), mb[s].get("per_item")
        if ia is None or ib is None:
            print(f"{s}: {a} {ma[s]['score']} (n={ma[s]['n']}), {b} {mb[s]['score']} (n={mb[s]['n']})")
            continue
        common = sorted(set(ia) & set(ib))
        va, vb = [ia[k] for k in common], [ib[k] for k in common]
        only_a, only_b, p = mcnemar_exact(va, vb)
        print(f"{s} (n={len(common)} common problems): {a} {100 * sum(va) / len(common):.1f}, {b} "
              f"{100 * sum(vb) / len(common):.1f}; {a} alone solves {only_a}, {b} alone {only_b}, exact McNemar p = {p:.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
