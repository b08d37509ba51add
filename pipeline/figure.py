"""Stage figure@<name>: `python -m pipeline.figure <name>` -> reports/<name>.png (and .csv, its numbers).

A per-group gain figure (paper Figure 2: chrF gain of CALM over mB for each low-resource language, sorted).
conf/ declares it as `figures.<name>`:

    world: languages            set: flores_lrl_test        reference: mB      (the model gains are measured from)
    models: {CALM: calm, mB+NTL: skyline}                   (title -> model, one series each)
    title: ...

Each series is sorted by its own gain, as the paper plots it; the legend gives #(>reference), the count of
groups where the model scores above the reference (the paper's 175 of 192 for CALM over PaLM2-S).
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_write_bytes, atomic_write_text, require
from pipeline.layout import figure_path, metrics_path
from pipeline.params import load_params


def figure_conf(name: str, params: dict) -> dict:
    figures = params.get("figures") or {}
    if name not in figures:
        raise PipelineError(f"unknown figure {name!r}: params.yaml declares {', '.join(figures) or 'none'}")
    return figures[name]


def _by_group(world: str, model: str, set_name: str) -> dict[str, float]:
    metrics = json.loads(require(metrics_path(world, model), "upstream metrics").read_text())["metrics"]
    groups = (metrics.get(set_name) or {}).get("by_group")
    if not groups:
        raise PipelineError(f"{metrics_path(world, model)} has no per-group scores for set {set_name!r}")
    return groups


def gains(fcfg: dict) -> dict[str, dict[str, float]]:
    """{series title: {group: model score - reference score}} over the groups both have."""
    world, set_name = fcfg["world"], fcfg["set"]
    ref = _by_group(world, fcfg["reference"], set_name)
    out = {}
    for title, model in fcfg["models"].items():
        mine = _by_group(world, model, set_name)
        out[title] = {g: mine[g] - ref[g] for g in sorted(mine) if g in ref}
    return out


def render(name: str, params: dict) -> tuple[bytes, str]:
    """-> (PNG bytes, CSV text) of figure `name`."""
    import matplotlib

    matplotlib.use("Agg")  # no display; and a fixed backend gives the same bytes on every machine
    import matplotlib.pyplot as plt

    fcfg = figure_conf(name, params)
    series = gains(fcfg)
    ref = fcfg["reference"]
    fig, ax = plt.subplots(figsize=(8, 4), dpi=100)
    for title, g in series.items():
        values = sorted(g.values())
        above = sum(1 for v in values if v > 0)
        ax.plot(range(1, len(values) + 1), values, marker="o", markersize=3,
                label=f"{title} - {ref}: #(>{ref}) = {above} of {len(values)}")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel(f"{fcfg.get('group_label', 'group')}, sorted by gain")
    ax.set_ylabel(f"gain over {ref} ({fcfg.get('metric_label', 'score')})")
    ax.set_title(fcfg.get("title", name), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version stamp: same bytes on every rerun
    plt.close(fig)
    table = io.StringIO()
    w = csv.writer(table, lineterminator="\n")
    w.writerow(["figure", "series", "group", f"gain_over_{ref}"])
    for title, g in series.items():
        for group, v in sorted(g.items(), key=lambda kv: kv[1]):
            w.writerow([name, title, group, round(v, 2)])
    return buf.getvalue(), table.getvalue()


def write_figure(name: str, params: dict) -> Path:
    png, table = render(name, params)
    out = figure_path(name)
    atomic_write_text(out.with_suffix(".csv"), table)
    atomic_write_bytes(out, png)
    return out


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.figure <figure>")
    print(f"wrote {write_figure(argv[0], load_params())}")


if __name__ == "__main__":
    main()
