"""What every report table shares (pipeline/report.py, pipeline/seed_tables.py): metric names, figures as printed,
the metrics a model's evaluation wrote, each model's line under a table (what it is, how it differs from its
reference), the grading of the table's sets, and the paired tests of a block's pass@1 rows (McNemar's exact test
on one run each, an exact sign-flip test over problems where a column has several seeds)."""
from __future__ import annotations

import json

from pipeline.errors import PipelineError
from pipeline.io import require
from pipeline.layout import metrics_path
from pipeline.training.data import anchor_replay_setting
from pipeline.training.lineage import upstream_models


METRIC_NAMES = {"exact_match": "exact match (%)", "chrf": "chrF1", "chrf2": "chrF2", "gsm_accuracy": "accuracy (%)",
                "pass_at_k": "pass@1 (%)", "bits_per_byte": "bits per byte (lower is better)"}


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def _metrics(world: str, model: str) -> dict:
    return json.loads(require(metrics_path(world, model), "upstream metrics").read_text())["metrics"]


def _differences(cfg: dict, ref: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(cfg) | set(ref)):
        if k in ("variant_of", "seed"):
            continue
        a, b = cfg.get(k), ref.get(k)
        if isinstance(a, dict) and isinstance(b, (dict, type(None))):
            out += _differences(a, b or {}, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k} " + (", ".join(map(str, a)) if isinstance(a, list) else
                                          f"{{{', '.join(f'{x}: {y}' for x, y in a.items())}}}" if isinstance(a, dict) else str(a)))
    return out


def _model_line(name: str, cfg: dict, models: dict | None = None) -> str:
    kind = cfg.get("kind")
    ref = (models or {}).get(cfg.get("variant_of"))
    if ref is not None:  # a variant (conf/composition/variant.yaml): what differs from its reference
        return (f"{name}: {cfg['variant_of']} with " + "; ".join(_differences(cfg, ref))
                + (f"; its own seed {cfg['seed']}" if cfg.get("seed") is not None else ""))
    if kind == "composition":
        comp = cfg.get("composition") or {}
        replay, fresh = anchor_replay_setting(cfg)
        conns = comp.get("connections")
        return (f"{name}: composition of anchor {cfg['anchor']} with {', '.join(cfg['augmenting'])}, mode "
                f"{comp.get('mode') or 'iterative'}, connections {conns if conns is not None else 'default (every 4th mA layer)'}"
                + ("; mA's last layer read after its final norm" if comp.get("final_norm") else "")
                + ("; each anchor token also reads mA's states on the word in progress (read_pending)"
                   if comp.get("read_pending") else "")
                + ("; ALiBi recency bias over the readable mA states" if comp.get("recency_bias") else "")
                + (f"; bridges started from the shared vocabulary (lexical start, strength "
                   f"{comp['lexical_start']['strength']}, slope {comp['lexical_start']['slope']})"
                   if comp.get("lexical_start") else "")
                + (f"; attention dropout {comp['attention_dropout']} while training" if comp.get("attention_dropout") else "")
                + (f"; dropout {comp['augmenting_dropout']} on mA's states while training" if comp.get("augmenting_dropout") else "")
                + (f"; D_C `{cfg['data']}` mixed with {100 * replay:.0f}% rows of the anchor's own training data (anchor replay"
                   + (", drawn fresh across the run" if fresh else "") + ")" if replay else f"; D_C `{cfg['data']}`")
                + (f"; loss on each D_C target up to the first `{cfg['loss_until']}`" if cfg.get("loss_until") else "")
                + (f"; its own seed {cfg['seed']}" if cfg.get("seed") is not None else ""))
    arch = cfg.get("arch") or {}
    shape = f" {arch.get('type', 'llama')} {arch['layers']}x{arch['hidden']}" if arch and cfg.get("init", "random") == "random" else ""
    data = cfg.get("data")
    data = ", ".join(data) if isinstance(data, list) else data
    steps = (cfg.get("train") or {}).get("steps")
    rank = (cfg.get("lora") or {}).get("r")
    extra = "" if kind != "lora" or rank is None else (f", LoRA r matched to {rank['match']}'s added parameters"
                                                        if isinstance(rank, dict) else f", LoRA r={rank}")
    if steps == 0:
        return f"{name}: {kind}{shape} (init {cfg.get('init', 'random')}, untrained{extra})"
    return f"{name}: {kind}{shape} (init {cfg.get('init', 'random')}, data {data}, {steps} steps{extra})"


def _models_behind(world: str, names, models: dict) -> list[str]:
    """The named models and every model they build on (init, anchor, augmenting), in declaration order."""
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += upstream_models(world, name, models[name], models)
    return [m for m in models if m in seen]


def table_conf(table: str, params: dict) -> dict:
    reports = params.get("reports") or {}
    if table not in reports:
        raise PipelineError(f"unknown report {table!r}: params.yaml declares {', '.join(reports) or 'none'}")
    return reports[table]


def _grading_lines(sets: dict, rows: list[dict]) -> list[str]:
    """How the sets these rows read are graded, where it is not the metric's plain reading."""
    used = {r["set"] for r in rows}
    sets = {s: c for s, c in sets.items() if s in used and c}
    lines = []
    cuts = {s: c["cut_at"] for s, c in sets.items() if c.get("cut_at")}
    if cuts:
        lines.append("grading: " + ", ".join(f"{s} up to the first `{c}`" for s, c in cuts.items())
                     + "; all else as the metric says, on the whole output")
    calculated = [s for s, c in sets.items() if c.get("calculator")]
    if calculated:
        lines.append(f"grading: {', '.join(calculated)} with a calculator (GSM8K's `<<a op b=c>>` annotations): an answer "
                     "that opens with a calculation `a op b =` is graded on its value, not on the number written after it;"
                     " the model is graded on reading the problem (operands and operation), not on doing the sum")
    return lines


def mcnemar_exact(first: list[int], second: list[int]) -> tuple[int, int, float]:
    """The exact McNemar test of two models' verdicts on the same items (1 = solved): (items only the first solves,
    items only the second solves, two-sided p). Under the null each discordant item is the first's with probability
    1/2: p = min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)]); no discordant item gives p = 1."""
    from math import comb

    if len(first) != len(second):
        raise PipelineError(f"paired test: {len(first)} verdicts against {len(second)}")
    b = sum(1 for x, y in zip(first, second) if x and not y)
    c = sum(1 for x, y in zip(first, second) if y and not x)
    n = b + c
    if n == 0:
        return b, c, 1.0
    tail = sum(comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return b, c, min(1.0, 2 * tail)


def sign_flip_exact(differences: list) -> float:
    """The exact paired sign-flip test of per-item differences (each a Fraction, e.g. a model's pass rate over its
    seeds minus another's): under the null each difference is as likely negated, and p = P(|sum of the differences
    with random signs| >= |their sum|), two-sided, by exact enumeration of the sums. On 0/1 verdicts of one run each
    it is the exact McNemar test (`mcnemar_exact`): the same p."""
    from fractions import Fraction
    from math import lcm

    nonzero = [Fraction(d) for d in differences if d]
    if not nonzero:
        return 1.0
    scale = lcm(*(d.denominator for d in nonzero))
    steps = [abs(int(d * scale)) for d in nonzero]  # integers: the sums' distribution by dynamic programming
    counts = {0: 1}
    for step in steps:
        following: dict[int, int] = {}
        for total, ways in counts.items():
            for signed in (step, -step):
                following[total + signed] = following.get(total + signed, 0) + ways
        counts = following
    observed = abs(sum(int(d * scale) for d in nonzero))
    return sum(ways for total, ways in counts.items() if abs(total) >= observed) / 2 ** len(steps)


def _pass_rates(runs: list[dict], name: str) -> dict | None:
    """Each item's pass rate over `runs` (one per seed), or None when a run records no per-item verdicts of `name`."""
    from fractions import Fraction

    verdicts = [(r["metrics"].get(name) or {}).get("per_item") for r in runs]
    if any(v is None for v in verdicts) or any(set(v) != set(verdicts[0]) for v in verdicts):
        return None
    return {k: Fraction(sum(v[k] for v in verdicts), len(verdicts)) for k in verdicts[0]}


def _paired_sets(a: str, b: str, rows: list[dict], runs_a: list[dict], runs_b: list[dict]) -> list[tuple[str, list, list]]:
    """The pass@1 rows (one per set) whose per-item verdicts both columns' runs record: (set, a's pass rate of each
    item, b's), items in one order."""
    sets = []
    for row in rows:
        if row.get("group") is not None or row["set"] in (name for name, _, _ in sets):
            continue
        ra, rb = _pass_rates(runs_a, row["set"]), _pass_rates(runs_b, row["set"])
        if ra is None or rb is None:
            continue
        if set(ra) != set(rb):
            raise PipelineError(f"paired test {a} vs {b}: set {row['set']} holds other items in the two runs")
        keys = sorted(ra)
        sets.append((row["set"], [ra[k] for k in keys], [rb[k] for k in keys]))
    return sets


def _paired_over_seeds(a: str, b: str, rows: list[dict], runs: dict) -> str | None:
    """Where a column has several runs (seeds): the sign-flip test over problems on each problem's pass rate over
    every run of each column, per pass@1 row and pooled; None when both columns have one run."""
    if len(runs[a]) < 2 and len(runs[b]) < 2:
        return None
    parts, pooled = [], []
    sets = _paired_sets(a, b, rows, runs[a], runs[b])
    for name, va, vb in sets:
        differences = [x - y for x, y in zip(va, vb)]
        better, worse = sum(1 for d in differences if d > 0), sum(1 for d in differences if d < 0)
        parts.append(f"{name} (n={len(differences)}): {a} higher on {better}, {b} on {worse}, "
                     f"p = {sign_flip_exact(differences):.3g}")
        pooled += differences
    if not parts:
        return None
    if len(sets) > 1:
        parts.append(f"pooled (n={len(pooled)}): {sum(1 for d in pooled if d > 0)} vs {sum(1 for d in pooled if d < 0)}, "
                     f"p = {sign_flip_exact(pooled):.3g}")
    return (f"paired test {a} vs {b} over all runs ({len(runs[a])} of {a}, {len(runs[b])} of {b}; exact sign-flip test "
            f"over problems of each problem's pass rate over its runs, two-sided): " + "; ".join(parts))


def _paired_lines(world: str, block: dict, rows: list[dict], runs: dict) -> list[str]:
    """`paired: [[A, B], ...]` (column titles): an exact McNemar test over the items of each pass@1 row whose set
    records its per-item verdicts (`per_item: true`), on each column's default run, and over those rows pooled; and
    where a column has several runs, the sign-flip test over all of them (`_paired_over_seeds`)."""
    lines = []
    for pair in block.get("paired") or []:
        if len(pair) != 2 or any(t not in block["columns"] for t in pair):
            raise PipelineError(f"reports: block {world}'s paired entry {pair!r} must name two of its columns "
                                f"({', '.join(block['columns'])})")
        a, b = pair
        if not runs[a] or not runs[b]:
            lines.append(f"paired test {a} vs {b}: not run (a column has no run)")
            continue
        sets = _paired_sets(a, b, rows, runs[a][:1], runs[b][:1])
        if not sets:
            continue
        parts, pooled_a, pooled_b = [], [], []
        for name, va, vb in sets:
            only_a, only_b, pv = mcnemar_exact(va, vb)
            parts.append(f"{name} (n={len(va)}): {a} alone solves {only_a}, {b} alone {only_b}, p = {pv:.3g}")
            pooled_a += va
            pooled_b += vb
        if len(sets) > 1:
            only_a, only_b, pv = mcnemar_exact(pooled_a, pooled_b)
            parts.append(f"pooled {' + '.join(name for name, _, _ in sets)} (n={len(pooled_a)}): {only_a} vs {only_b}, "
                         f"p = {pv:.3g}")
        lines.append(f"paired test {a} vs {b} (exact McNemar, two-sided, over problems, default runs): " + "; ".join(parts))
        over_seeds = _paired_over_seeds(a, b, rows, runs)
        if over_seeds:
            lines.append(over_seeds)
    return lines
