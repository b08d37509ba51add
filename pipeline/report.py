"""Stage report@<table>: `python -m pipeline.report <table>` -> reports/<table>.md and .csv.
`python -m pipeline.report <table> <world>` prints that world's block alone, as the whole table computes it, and
writes nothing: it reads that world's outputs only, so it works in a workspace that has built one world.

A table is blocks, one per world (`reports.<table>.blocks.<world>`): rows are evaluation sets (each with its
metric), columns are models; each cell is our figure beside the paper's. Under the table: the settings a reader
needs to rerun it, generic (preset, seeds, models, compositions, grading) and world-specific (the world
module's `report_lines`).

A table that names a `reference` column (Table 5: ablations) is a table over seeds (build_seed_table): each
cell is the mean +- std over every seed that exists for its model, the default cell (the DVC stage's output)
and the runs of Hydra sweeps (pipeline/sweep.py: reports/<world>/sweeps/<sweep>/<model>-seed<k>/run.json, made
with the model's current conf); each column is compared with the reference, a difference counting only beyond
the seed spread (`significance`). It also prints each model's added or trained parameters and steps (never its
training time: a report holds only what reproduces to the byte on any machine).

Split by job: this module builds the one-seed tables and writes both kinds; seed_tables.py builds the tables over
seeds; report_cells.py holds what both share (metric names, figures as printed, each model's line).
"""
from __future__ import annotations

import copy
import csv
import io
import json

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_write_text, require
from pipeline.layout import SUMMARY_FILE, data_dir, table_path
from pipeline.params import load_params
from pipeline.report_cells import METRIC_NAMES, _fmt, _grading_lines, _metrics, _model_line, _models_behind, table_conf
from pipeline.seed_tables import _row_metric, build_seed_table, row_value
from pipeline.report_cells import mcnemar_exact  # noqa: F401 (imported from here)
from pipeline.seed_tables import build_digests, run_digest  # noqa: F401 (imported from here)
from pipeline.worlds import get_world


def build_table(table: str, params: dict) -> tuple[str, str, list[dict]]:
    tcfg = table_conf(table, params)
    if tcfg.get("reference"):
        return build_seed_table(table, params)
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
            metric = _row_metric(row, (sets[row["set"]] or {}).get("metric", "exact_match"))
            ref_metrics = _metrics(world, row["groups_above"]) if row.get("groups_above") else None
            line = []
            for title, model in cols.items():
                m = mets[title].get(row["set"])
                cell = {"table": table, "world": world, "task": row["name"], "set": row["set"], "metric": metric,
                        "model": title, "ours": row_value(mets[title], row, ref_metrics),
                        "n": None if m is None or row.get("group") is not None else m["n"],  # a group's n: the set's / its groups
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
            summary = json.loads(require(data_dir(world) / SUMMARY_FILE, "upstream output").read_text())
            for line in module.report_lines(wcfg["data"], summary, wcfg):
                md.write(f"- {line}\n")
        for line in _grading_lines(sets, rows):
            md.write(f"- {line}\n")
        md.write("- models: " + "; ".join(_model_line(n, models[n]) for n in _models_behind(world, cols.values(), models)) + "\n")
        first = list(cols)[0]
        sizes = {c["set"]: c["n"] for c in cells if c["world"] == world and c["model"] == first and c["n"] is not None}
        md.write("- test sizes: " + ", ".join(f"{s} n={n}" for s, n in sizes.items()) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["table", "world", "task", "set", "metric", "model", "ours", "paper", "n", "preset"],
                       lineterminator="\n")
    w.writeheader()
    for c in cells:
        w.writerow({**c, "preset": params["preset"]})
    return md.getvalue(), buf.getvalue(), cells


def world_block(table: str, params: dict, world: str) -> str:
    """One world's block of a table, as the whole table computes it (a block reads its own world's outputs only)."""
    blocks = table_conf(table, params)["blocks"]
    if world not in blocks:
        raise PipelineError(f"report {table!r} has no block for world {world!r}: its blocks are {', '.join(blocks)}")
    params = copy.deepcopy(params)
    params["reports"][table]["blocks"] = {world: blocks[world]}
    return build_table(table, params)[0]


def write_report(table: str, params: dict) -> str:
    """Build the table, then write reports/<table>.csv and .md (each atomically); -> the markdown."""
    md, csv_text, _ = build_table(table, params)
    atomic_write_text(table_path(table, ".csv"), csv_text)
    atomic_write_text(table_path(table, ".md"), md)
    return md


@cli
def main(argv: list[str]) -> None:
    if len(argv) not in (1, 2):
        raise PipelineError("usage: python -m pipeline.report <table> [<world>]")
    if len(argv) == 2:
        print(world_block(argv[0], load_params(), argv[1]))
        return
    print(write_report(argv[0], load_params()))


if __name__ == "__main__":
    main()
