"""Stage report@<table>: `python -m pipeline.report <table>` -> reports/<table>.md and .csv.

A table is blocks, one per world (`reports.<table>.blocks.<world>`): rows are evaluation sets (each with its
metric), columns are models; each cell is our figure beside the paper's. Under the table: the settings a reader
needs to rerun it, generic (preset, seeds, models, compositions, grading) and world-specific (the world
module's `report_lines`).
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.evaluate import metrics_path
from pipeline.io import atomic_write_text, require
from pipeline.params import load_params
from pipeline.worlds import get_world

METRIC_NAMES = {"exact_match": "exact match (%)", "chrf": "chrF1", "gsm_accuracy": "accuracy (%)",
                "pass_at_k": "pass@1 (%)"}


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def _metrics(world: str, model: str) -> dict:
    return json.loads(require(metrics_path(world, model), "upstream metrics").read_text())["metrics"]


def _model_line(name: str, cfg: dict) -> str:
    kind = cfg.get("kind")
    if kind == "composition":
        comp = cfg.get("composition") or {}
        replay = float(cfg.get("anchor_replay") or 0.0)
        conns = comp.get("connections")
        return (f"{name}: composition of anchor {cfg['anchor']} with {', '.join(cfg['augmenting'])}, mode "
                f"{comp.get('mode') or 'iterative'}, connections {conns if conns is not None else 'default (every 4th mA layer)'}"
                + ("; mA's last layer read after its final norm" if comp.get("final_norm") else "")
                + (f"; attention dropout {comp['attention_dropout']} while training" if comp.get("attention_dropout") else "")
                + (f"; dropout {comp['augmenting_dropout']} on mA's states while training" if comp.get("augmenting_dropout") else "")
                + (f"; D_C `{cfg['data']}` mixed with {100 * replay:.0f}% rows of the anchor's own training data (anchor replay)" if replay else f"; D_C `{cfg['data']}`")
                + (f"; loss on each D_C target up to the first `{cfg['loss_until']}`" if cfg.get("loss_until") else "")
                + (f"; its own seed {cfg['seed']}" if cfg.get("seed") is not None else ""))
    arch = cfg.get("arch") or {}
    shape = f" {arch.get('type', 'llama')} {arch['layers']}x{arch['hidden']}" if arch and cfg.get("init", "random") == "random" else ""
    data = cfg.get("data")
    data = ", ".join(data) if isinstance(data, list) else data
    steps = (cfg.get("train") or {}).get("steps")
    extra = f", LoRA r={cfg['lora']['r']}" if kind == "lora" and cfg.get("lora") else ""
    return f"{name}: {kind}{shape} (init {cfg.get('init', 'random')}, data {data}, {steps} steps{extra})"


def build_table(table: str, params: dict) -> tuple[str, str, list[dict]]:
    reports = params.get("reports") or {}
    if table not in reports:
        raise PipelineError(f"unknown report {table!r}: params.yaml declares {', '.join(reports) or 'none'}")
    tcfg = reports[table]
    md = io.StringIO()
    md.write(f"# {table}: {tcfg.get('title', '')}, preset `{params['preset']}`\n\n")
    md.write("Each cell is **ours** / paper; greedy decoding unless a set says otherwise.\n")
    cells = []
    for world, block in tcfg["blocks"].items():
        wcfg = params["worlds"][world]
        cols = block["columns"]
        mets = {title: _metrics(world, model) for title, model in cols.items()}
        sets = wcfg["evaluation"]["sets"]
        rows = block["rows"] + block.get("extra_rows", [])
        if len(tcfg["blocks"]) > 1:
            md.write(f"\n## {world}\n")
        md.write("\n| task | metric | " + " | ".join(cols) + " |\n|---|---|" + "---|" * len(cols) + "\n")
        for row in rows:
            if row["set"] not in sets:
                raise PipelineError(f"reports.{table}: row {row['name']!r} reads set {row['set']!r}, which world {world} does not evaluate")
            metric = (sets[row["set"]] or {}).get("metric", "exact_match")
            line = []
            for title, model in cols.items():
                m = mets[title].get(row["set"])
                cell = {"table": table, "world": world, "task": row["name"], "set": row["set"], "metric": metric,
                        "model": title, "ours": None if m is None else m["score"], "n": None if m is None else m["n"],
                        "paper": (row.get("paper") or {}).get(title)}
                cells.append(cell)
                line.append(f"**{_fmt(cell['ours'])}** / {_fmt(cell['paper'])}")
            md.write(f"| {row['name']} | {METRIC_NAMES.get(metric, metric)} | " + " | ".join(line) + " |\n")
        md.write("\n")
        models = wcfg["models"]
        own_seeds = {m: models[m]["seed"] for m in cols.values() if models[m].get("seed") is not None}
        md.write(f"- preset `{params['preset']}`; seed {params['seed']}"
                 + "".join(f"; {m}'s own seed {s}" for m, s in own_seeds.items()) + "\n")
        module = get_world(params, world)
        if hasattr(module, "report_lines"):
            summary = json.loads(require(Path("data") / world / "summary.json", "upstream output").read_text())
            for line in module.report_lines(wcfg["data"], summary):
                md.write(f"- {line}\n")
        cuts = {s: c["cut_at"] for s, c in sets.items() if c and c.get("cut_at")}
        if cuts:
            md.write("- grading: " + ", ".join(f"{s} up to the first `{c}`" for s, c in cuts.items())
                     + "; all else as the metric says, on the whole output\n")
        md.write("- models: " + "; ".join(_model_line(n, models[n]) for n in models) + "\n")
        first = list(cols)[0]
        md.write("- test sizes: " + ", ".join(f"{c['set']} n={c['n']}" for c in cells if c["world"] == world and c["model"] == first) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["table", "world", "task", "set", "metric", "model", "ours", "paper", "n", "preset"],
                       lineterminator="\n")
    w.writeheader()
    for c in cells:
        w.writerow({**c, "preset": params["preset"]})
    return md.getvalue(), buf.getvalue(), cells


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.report <table>")
    md, csv_text, _ = build_table(argv[0], load_params())
    atomic_write_text(Path("reports") / f"{argv[0]}.csv", csv_text)
    atomic_write_text(Path("reports") / f"{argv[0]}.md", md)
    print(md)


if __name__ == "__main__":
    main()
