"""A saved composition with some of its bridges silenced: a copy of the folder in which those bridges' output
projections (`bridges.<augmenting>.<bridge>.o_proj.weight`) are zero, so they add nothing to the anchor's stream
and the rest of the composition is as trained. Scoring the copy (dev_eval.py, udhr_english_bits.py) says what each
bridge contributes to a figure.

    python experiments/table2_xtok/zero_bridges.py <composition folder> <new folder> <bridge> [<bridge> ...]
    e.g.  python experiments/table2_xtok/zero_bridges.py models/languages_xtok/calm calm-z0 0    (Gemma 5 -> SmolLM2 19)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

WEIGHTS = "model.safetensors"


def zero_bridges(source: Path, target: Path, bridges: list[int], augmenting: int = 0) -> list[str]:
    """Copy `source` to `target` (which must not exist) with the named bridges' o_proj zeroed; the zeroed names."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    if not (source / WEIGHTS).is_file():
        raise SystemExit(f"zero_bridges: {source} holds no {WEIGHTS} (a saved composition's folder)")
    if target.exists():
        raise SystemExit(f"zero_bridges: {target} exists; give a new folder")
    tensors = load_file(source / WEIGHTS)
    names = [f"bridges.{augmenting}.{b}.o_proj.weight" for b in bridges]
    missing = [n for n in names if n not in tensors]
    if missing:
        present = sorted({k.rsplit(".", 2)[0] for k in tensors if k.startswith("bridges.")})
        raise SystemExit(f"zero_bridges: {source} has no {', '.join(missing)} (its bridges: {', '.join(present)})")
    with safe_open(source / WEIGHTS, "pt") as f:
        metadata = f.metadata()
    for n in names:
        tensors[n].zero_()
    building = target.with_name(target.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    shutil.copytree(source, building)
    save_file(tensors, building / WEIGHTS, metadata=metadata)
    building.rename(target)   # whole or absent
    return names


def main(argv: list[str]) -> None:
    if len(argv) < 3 or not all(a.isdigit() for a in argv[2:]):
        raise SystemExit(__doc__)
    for name in zero_bridges(Path(argv[0]), Path(argv[1]), [int(a) for a in argv[2:]]):
        print("zeroed", name)


if __name__ == "__main__":
    main(sys.argv[1:])
