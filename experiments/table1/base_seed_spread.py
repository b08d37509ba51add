"""Table 1's figures over base seeds and composition seeds: what experiments/table1/base_seeds.sh wrote, beside the
published bases (base seed 0: the committed metrics of mA, mB and CALM seed 0, and the Table 5 sweep records of CALM
seeds 1 and 2, trained on the same bases).

    python experiments/table1/base_seed_spread.py <WORK of base_seeds.sh> [...]

Prints, per base seed, mA's KV-Substitution, mB's NUM-Arithmetic and CALM's four figures for each composition seed
with their mean ± std; then every run pooled, and the spread of the base seeds' means (how far a base seed moves a
cell, the yardstick for the float paths' gap, which sits in the bases). Runs made with CALM_OVERRIDES (another
recipe) are tabulated without the published row, and runs of different recipes are refused, in one line.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = {"held-out": "kv_math_test", "held-in": "kv_math_held_in_test", "KV-Subs": "kv_subs_test",
        "NUM": "num_math_test"}


def scores(metrics: dict) -> dict[str, float]:
    """{column: score} from a metrics file's or a sweep record's `metrics` block."""
    return {column: float(metrics[key]["score"]) for column, key in SETS.items()}


def base_skills(folder: Path) -> dict[str, float]:
    """Each base's own skill from its metrics file in `folder`: mA's KV-Substitution, mB's NUM-Arithmetic."""
    def score(model, key):
        return float(json.loads((folder / f"{model}.json").read_text())["metrics"][key]["score"])
    return {"mA": score("mA", "kv_subs_test"), "mB": score("mB", "num_math_test")}


def published_base() -> dict:
    """Base seed 0 as published: the committed metrics files and Table 5's sweep records of CALM seeds 1-2."""
    world = ROOT / "reports" / "kv_arithmetic"
    calm = {0: scores(json.loads((world / "metrics" / "calm.json").read_text())["metrics"])}
    for seed in (1, 2):
        record = json.loads((world / "sweeps" / "table5" / f"calm-seed{seed}" / "run.json").read_text())
        calm[seed] = scores(record["metrics"])
    return {"published": True, **base_skills(world / "metrics"), "calm": calm}


def overrides(results: Path) -> str:
    """The CALM_OVERRIDES a base seed's run was made with ('' for the published recipe)."""
    path = results / "overrides.txt"
    return path.read_text().strip() if path.is_file() else ""


def read_base(results: Path) -> dict:
    """One base seed's results folder (base_seeds.sh): mA.json, mB.json, calm-seed<N>.json."""
    calm = {int(p.stem.split("seed")[1]): scores(json.loads(p.read_text())["metrics"])
            for p in sorted(results.glob("calm-seed*.json"))}
    if not calm:
        raise SystemExit(f"base_seed_spread: {results} holds no calm-seed<N>.json (has base_seeds.sh finished?)")
    return {**base_skills(results), "calm": calm}


def mean_std(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def table(bases: dict[int, dict]) -> list[str]:
    """Markdown lines: one row per base seed, then the pooled runs and the spread of the base seeds' means."""
    lines = ["| bases | mA KV-Subs | mB NUM | CALM held-out (seeds) | mean | held-in | KV-Subs | NUM |",
             "|---|---|---|---|---|---|---|---|"]
    pooled = {column: [] for column in SETS}
    for base, b in sorted(bases.items()):
        runs = [b["calm"][seed] for seed in sorted(b["calm"])]
        for column in SETS:
            pooled[column] += [r[column] for r in runs]
        held_out = " / ".join(f"{r['held-out']:.1f}" for r in runs)
        label = f"seed {base}" + (" (published)" if b.get("published") else "")
        lines.append(f"| {label} | {b['mA']:.1f} | {b['mB']:.1f} | "
                     f"{held_out} | **{mean_std([r['held-out'] for r in runs])}** | "
                     + " | ".join(mean_std([r[c] for r in runs]) for c in ("held-in", "KV-Subs", "NUM")) + " |")
    lines.append(f"| every run ({len(pooled['held-out'])}) | | | | **{mean_std(pooled['held-out'])}** | "
                 + " | ".join(mean_std(pooled[c]) for c in ("held-in", "KV-Subs", "NUM")) + " |")
    held_out = [[r["held-out"] for r in b["calm"].values()] for b in bases.values()]
    means = [statistics.mean(runs) for runs in held_out]
    within = [statistics.stdev(runs) for runs in held_out if len(runs) > 1]
    if len(means) > 1 and within:
        lines.append(f"\nheld-out: the base seeds' means span {min(means):.1f}-{max(means):.1f} "
                     f"(std {statistics.stdev(means):.1f}); the composition seeds' std within a base, on average "
                     f"{statistics.mean(within):.1f}")
    return lines


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python experiments/table1/base_seed_spread.py <WORK of base_seeds.sh> [...]")
    found = {int(results.parent.name.removeprefix("base")): results
             for work in argv for results in sorted(Path(work).glob("base*/results"))}
    if not found:
        raise SystemExit(f"base_seed_spread: no base<N>/results folder under {', '.join(argv)}")
    recipes = {overrides(results) for results in found.values()}
    if len(recipes) > 1:
        raise SystemExit(f"base_seed_spread: these runs were made with different CALM_OVERRIDES ({recipes}): "
                         "one recipe a table")
    recipe = recipes.pop()
    # the committed files are the published recipe's: beside another recipe's runs they would mix two recipes
    bases = {} if recipe else {0: published_base()}
    bases.update({seed: read_base(results) for seed, results in found.items()})
    print(f"recipe: {recipe or 'published'}")
    print("\n".join(table(bases)))


if __name__ == "__main__":
    main(sys.argv[1:])
