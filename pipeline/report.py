"""Stage report@<table>: `python -m pipeline.report table1` -> reports/table1.md and .csv.

Paper layout (rows: tasks, columns: mA, mB, CALM), our exact-match accuracy
beside the paper's, with the preset and the data choices printed.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from pipeline.config import PipelineError, atomic_write_text, cli, load_params, require


def _metrics(model: str) -> dict:
    p = require(Path("reports/metrics") / f"{model}.json", "upstream metrics")
    return json.loads(p.read_text())["metrics"]


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def build_table(name: str, params: dict) -> tuple[str, str, list[dict]]:
    if name not in params.get("report", {}):
        raise PipelineError(f"unknown report {name!r}: params.yaml declares {', '.join(params.get('report', {}))}")
    tcfg = params["report"][name]
    world = params["evaluation"]["world"]
    summary = json.loads(require(Path("data") / world / "summary.json", "upstream output").read_text())
    cols = tcfg["models"]  # column title -> model name
    mets = {title: _metrics(model) for title, model in cols.items()}
    cells = []
    for row in tcfg["rows"] + tcfg.get("extra_rows", []):
        for title in cols:
            m = mets[title].get(row["dataset"])
            cells.append({
                "task": row["name"],
                "dataset": row["dataset"],
                "model": title,
                "ours": None if m is None else m["accuracy"],
                "n": None if m is None else m["n"],
                "paper": (row.get("paper") or {}).get(title),
            })
    wcfg = params["worlds"][world]
    md = io.StringIO()
    md.write(f"# {name}: key-value arithmetic (paper Table 1), preset `{params['preset']}`\n\n")
    md.write("Exact-match accuracy (%), greedy decoding; each cell is **ours** / paper.\n\n")
    md.write("| task | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n")
    for row in tcfg["rows"] + tcfg.get("extra_rows", []):
        r = [c for c in cells if c["task"] == row["name"]]
        md.write(f"| {row['name']} | " + " | ".join(f"**{_fmt(c['ours'])}** / {_fmt(c['paper'])}" for c in r) + " |\n")
    comp = params["compositions"].get(cols.get("CALM", ""), {})
    md.write("\n")
    comp_seed = comp.get("seed")
    md.write(f"- preset: `{params['preset']}`; seed {params['seed']}"
             + (f"; composition seed {comp_seed}" if comp_seed is not None else "") + "\n")
    md.write(
        f"- D_KV: {wcfg['n_keys']} keys of {wcfg['key_length'][0]}-{wcfg['key_length'][1]} characters, values a permutation of 1..{wcfg['n_keys']}; "
        f"expressions of {wcfg['n_terms'][0]}-{wcfg['n_terms'][1]} keys over {' '.join(wcfg['operators'])}\n"
    )
    md.write(f"- answer format: `{wcfg['answer_format']}`" + (" (answer digits least-significant first)" if wcfg["answer_format"] == "reversed" else "") + f"; numbers `{wcfg.get('number_format', 'plain')}`\n")
    if wcfg.get("kv_math_format", "direct") == "scratchpad":
        md.write("- KV-Arithmetic format: `scratchpad`: the target is the substituted expression, `=`, then the value (e.g. `ab+cd=` -> `12+34=64`); exact match on all of it\n")
    else:
        md.write("- KV-Arithmetic format: `direct`: the target is the value only (the paper's format)\n")
    cut = params["evaluation"].get("cut_at") or {}
    if cut:
        md.write("- grading: " + ", ".join(f"{d} up to the first `{c}`" for d, c in cut.items()) + "; all else exact match of the whole output\n")
    md.write(
        f"- composition data D_C: `{wcfg['composition_task']}` over the held-in {summary['n_held_in']} keys "
        f"({100 * wcfg['held_in_fraction']:.0f}%, chosen `{summary.get('held_in_selection', 'random')}`); "
        f"KV-Arithmetic (held-out keys) uses only keys outside them\n"
    )
    if comp:
        replay = float(comp.get("anchor_replay") or 0.0)
        md.write(
            f"- CALM: anchor {comp['anchor']}, augmenting {', '.join(comp['augmenting'])}, mode {comp['mode']}, "
            f"connections {comp['connections'] if comp['connections'] is not None else 'default'}"
            + ("; mA's last layer read after its final norm" if comp.get("final_norm") else "")
            + (f"; attention dropout {comp['attention_dropout']} while training" if comp.get("attention_dropout") else "")
            + (f"; dropout {comp['augmenting_dropout']} on mA's states while training" if comp.get("augmenting_dropout") else "")
            + (f"; D_C mixed with {100 * replay:.0f}% rows of the anchor's own training data (anchor replay, no keys)" if replay else "")
            + (f"; loss on each D_C target up to the first `{comp['loss_until']}`" if comp.get("loss_until") else "")
            + "\n"
        )
    bm = params["base_models"]
    md.write("- models: " + "; ".join(
        f"{k} {v['arch'].get('type', 'llama')} {v['arch']['layers']}x{v['arch']['hidden']} (init {v['init']}, data {v['data']})" for k, v in bm.items()
    ) + "\n")
    md.write("- test sizes: " + ", ".join(f"{c['dataset']} n={c['n']}" for c in cells if c["model"] == list(cols)[0]) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["task", "dataset", "model", "ours", "paper", "n", "preset"], lineterminator="\n")
    w.writeheader()
    for c in cells:
        w.writerow({**c, "preset": params["preset"]})
    return md.getvalue(), buf.getvalue(), cells


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.report <table>")
    params = load_params()
    md, csv_text, _ = build_table(argv[0], params)
    atomic_write_text(Path("reports") / f"{argv[0]}.csv", csv_text)
    atomic_write_text(Path("reports") / f"{argv[0]}.md", md)
    print(md)


if __name__ == "__main__":
    main()
