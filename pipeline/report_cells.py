"""What every report table shares (pipeline/report.py, pipeline/seed_tables.py): metric names, figures as printed,
the metrics a model's evaluation wrote, each model's line under a table (what it is, how it differs from its
reference), the grading of the table's sets."""
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
