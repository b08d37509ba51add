"""Tables over seeds (report.py's build_seed_table, Table 5): a table that names a `reference` column. Each cell is
the mean +- std over every seed that exists for its model: the default cell (the DVC stage's output) and the runs
of Hydra sweeps (pipeline/sweep.py), counted only when their bases are the current build's (build_digests,
run_digest); each column is compared with the reference, a difference counting only beyond the seed spread, with
paired rows under McNemar's exact test; each model's added or trained parameters and steps (no training time:
seconds differ between machines, and a report reproduces to the byte)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io import fingerprint, require
from pipeline.layout import (RUN_FILE, SUMMARY_FILE, data_dir, metrics_path, model_dir, sweep_run_name, sweeps_dir,
                             tokenizer_dir)
from pipeline.report_cells import (METRIC_NAMES, _fmt, _grading_lines, _metrics, _model_line, _models_behind, _paired_lines,
                                   table_conf)
from pipeline.stages import execution_settings, synthesized_inputs
from pipeline.training.lineage import upstream_models
from pipeline.worlds import get_world


# ---- tables over seeds (Table 5) -------------------------------------------------------------------------------
# a model's files that say how its run went (timings, the loss log), not what it is: left out of its digest
RUN_LOG_FILES = frozenset({"train_info.json"})


_LOCKED: dict = {}  # the last dvc.lock read: its stamp (path, mtime, size) and its stages' params


def dvc_locked_params(root: Path = Path(".")) -> dict:
    """{stage name: the params.yaml values dvc.lock records it was built under}; {} without a lock. Parsed once per
    version of the file (a report asks for every column of every world)."""
    lock = root / "dvc.lock"
    if not lock.exists():
        return {}
    stamp = (str(lock.resolve()), lock.stat().st_mtime_ns, lock.stat().st_size)
    if _LOCKED.get("stamp") != stamp:
        # DVC's own parser: YAML 1.2 reads 5e-05 as a float where PyYAML's 1.1 resolver reads a string, and a
        # value read otherwise than DVC wrote it would call every cell with such a param stale
        from ruamel.yaml import YAML

        stages = (YAML(typ="safe").load(lock.read_text()) or {}).get("stages") or {}
        _LOCKED.update(stamp=stamp, params={n: ((s.get("params") or {}).get("params.yaml") or {}) for n, s in stages.items()})
    return _LOCKED["params"]


def other_micro_batches(stage: dict, params: dict, world: str) -> bool:
    """Whether DVC built a model (its dvc.lock stage params) under another micro-batching than params' (1 where
    the world does not set it)."""
    return stage.get(f"worlds.{world}.micro_batches", 1) != params["worlds"][world].get("micro_batches", 1)


def default_cell_staleness(params: dict, world: str, name: str, root: Path = Path(".")) -> str | None:
    """Why the DVC default cell of `name` (models/<world>/<name> and its metrics) is not this conf's, or None: the
    lock shows it, or a model it builds on, trained under other params than params.yaml's, or evaluated under
    another evaluation. A stage the lock does not record is not known to be stale (stages run without DVC)."""
    models, locked = params["worlds"][world]["models"], dvc_locked_params(root)
    for n in [name, *built_upstream(params, world, name)]:
        stage, key = locked.get(f"train@{world}/{n}"), f"worlds.{world}.models.{n}"
        if stage and key in stage and (stage[key] != models[n] or other_micro_batches(stage, params, world)):
            return f"models/{world}/{n} was trained under other params than params.yaml's"
    evaluated, key = locked.get(f"evaluate@{world}/{name}"), f"worlds.{world}.evaluation"
    if evaluated and key in evaluated and evaluated[key] != params["worlds"][world]["evaluation"]:
        return "its metrics were computed under another evaluation than params.yaml's"
    return None


def rebuilt_per_seed(models: dict, name: str) -> bool:
    """Whether a sweep job rebuilds model `name` with its own seed rather than taking the build's: an untrained
    model drawn at random (`train.steps: 0`, `init: random`, e.g. Table 5's random mA), or an untrained copy of one.
    A released model (steps 0 from a checkpoint) is the same bytes under every seed, so jobs share the build's, as
    they share trained ones."""
    cfg = models[name]
    if int((cfg.get("train") or {}).get("steps", 1)) != 0:
        return False
    init = str(cfg.get("init", "random"))
    return init == "random" or (init in models and init != name and rebuilt_per_seed(models, init))


def upstream_split(params: dict, world: str, name: str) -> tuple[list[str], list[str]]:
    """The models `name` builds on, transitively, in breadth-first order -> (built, rebuilt): those a sweep job
    takes from the build, and those it rebuilds with its own seed (`rebuilt_per_seed`)."""
    models = params["worlds"][world]["models"]
    built, rebuilt, todo, seen = [], [], list(upstream_models(world, name, models[name], models)), set()
    while todo:
        n = todo.pop(0)
        if n in seen:
            continue
        seen.add(n)
        (rebuilt if rebuilt_per_seed(models, n) else built).append(n)
        todo += upstream_models(world, n, models[n], models)
    return built, rebuilt


def built_upstream(params: dict, world: str, name: str) -> list[str]:
    """The models `name` builds on that a sweep job takes from the build (upstream_split's first list)."""
    return upstream_split(params, world, name)[0]


def build_digests(params: dict, world: str, name: str, root: Path = Path(".")) -> dict[str, str] | None:
    """What a run of `name` was trained on, by content: the world's data, the synthesized sets it trains on, its
    tokenizer and every model it takes from the build (`built_upstream`) -> {path: sha256 prefix}, or None when one
    of them is not built.
    Two runs count in one table only when these agree: the same conf on another float path or another machine gives
    other bases."""
    import hashlib

    digests = {}
    for path in (data_dir(world), *map(Path, synthesized_inputs(params, world, name)), tokenizer_dir(world),
                 *(model_dir(world, n) for n in built_upstream(params, world, name))):
        where = root / path
        if not where.is_dir():
            return None
        h = hashlib.sha256()
        for f in sorted(p for p in where.rglob("*") if p.is_file() and p.name not in RUN_LOG_FILES):
            h.update(str(f.relative_to(where)).encode() + b"\0")
            h.update(f.read_bytes())
        digests[str(path)] = h.hexdigest()[:16]
    return digests


def run_digest(params: dict, world: str, name: str) -> str:
    """What a run's figures depend on besides its seed: the model's conf, the confs of the models it builds on,
    the world's data, evaluation and positions, the global seed (data, anchor replay). A sweep run counts in a
    table only while its digest is the model's current one (a run made under another conf is stale)."""
    w = params["worlds"][world]
    models = w["models"]
    strip = lambda cfg: {k: v for k, v in cfg.items() if k != "seed"}  # noqa: E731  (seeds are what a sweep varies)
    related = {u: strip(models[u]) for u in upstream_models(world, name, models[name], models)}
    execution = execution_settings(params, world)  # a table never mixes runs made under two micro-batchings
    return fingerprint({"model": strip(models[name]), "related": related, "data": w["data"], "evaluation": w["evaluation"],
                        "max_positions": w["max_positions"], "seed": params["seed"],
                        "precision": (params.get("runtime") or {}).get("precision", "fp32"), **execution})


def model_runs(params: dict, world: str, name: str) -> tuple[list[dict], list[str]]:
    """-> (runs, notes): every finished run of model `name` under its current conf, one per seed, each
    {seed, metrics, train_info, source}: the default cell first (reports/<world>/metrics/<name>.json beside
    models/<world>/<name>/train_info.json), then the sweep runs in name order; notes say what was left out."""
    runs, notes, seen = [], [], set()
    metrics_file, info_file = metrics_path(world, name), model_dir(world, name) / "train_info.json"
    stale_default = metrics_file.exists() and info_file.exists() and default_cell_staleness(params, world, name)
    if stale_default:  # a table never mixes a cell built under an earlier conf with this one's (issue 29)
        notes.append(f"{name}: the DVC default cell is left out: {stale_default} (dvc repro "
                     f"evaluate@{world}/{name} rebuilds it)")
    elif metrics_file.exists() and info_file.exists():
        info = json.loads(info_file.read_text())
        runs.append({"seed": info.get("seed"), "metrics": json.loads(metrics_file.read_text())["metrics"],
                     "train_info": info, "source": "default"})
        seen.add(info.get("seed"))
    digest, stale, duplicate, other_bases = run_digest(params, world, name), 0, 0, 0
    bases = build_digests(params, world, name)
    root = sweeps_dir(world)
    for run_file in sorted(root.glob(f"*/{sweep_run_name(name, '*')}/{RUN_FILE}")) if root.is_dir() else []:
        run = json.loads(run_file.read_text())
        if run.get("model") != name:
            continue
        if run.get("digest") != digest:
            stale += 1
        elif run.get("bases") != bases:
            other_bases += 1  # trained on other data or bases (another build, float path or machine), or not recorded
        elif run["seed"] in seen:
            duplicate += 0 if run.get("reused_default_cell") else 1  # a reused default cell is that very run
        else:
            seen.add(run["seed"])
            runs.append({"seed": run["seed"], "metrics": run["metrics"], "train_info": run["train_info"],
                         "source": f"sweep {run_file.parent.parent.name}"})
    if stale:
        notes.append(f"{name}: {stale} sweep run(s) made under another conf left out")
    if other_bases:
        notes.append(f"{name}: {other_bases} sweep run(s) trained on other data or base models than this build's "
                     f"(or that do not record them) left out")
    if duplicate:
        notes.append(f"{name}: {duplicate} sweep run(s) with a seed already counted left out")
    return runs, notes


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    import statistics

    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _groups_above(run_metrics: dict, reference_metrics: dict, set_name: str) -> float | None:
    """How many groups (e.g. languages) of a set a run scores above the reference model on (paper: #(>mB))."""
    mine, ref = (run_metrics.get(set_name) or {}).get("by_group"), (reference_metrics.get(set_name) or {}).get("by_group")
    if mine is None or ref is None:
        return None
    return float(sum(1 for g, v in mine.items() if g in ref and v > ref[g]))


def row_value(metrics: dict, row: dict, reference_metrics: dict | None = None) -> float | None:
    """The figure a report row shows for one model's metrics (None: the model has no such figure). A row reads
    its set's `score`, or with `group: <g>` that group's score (e.g. one language), or with `groups: mean` the
    mean over the set's groups (the paper's per-language average), or with `groups_above: <model>` the count of
    groups scored above that model (paper: #(>mB)), or with `field: <name>` another figure of the set (chrf2)."""
    m = metrics.get(row["set"])
    if m is None:
        return None
    if row.get("groups_above"):
        return _groups_above(metrics, reference_metrics or {}, row["set"])
    by_group = m.get("by_group") or {}
    if row.get("group") is not None:
        if row["group"] not in by_group:
            raise PipelineError(f"report row {row['name']!r}: set {row['set']} has no group {row['group']!r} "
                                f"(it has {', '.join(by_group) or 'none'})")
        return by_group[row["group"]]
    if row.get("groups") == "mean":
        if not by_group:
            raise PipelineError(f"report row {row['name']!r}: set {row['set']} has no per-group scores to average")
        return sum(by_group.values()) / len(by_group)
    if row.get("groups") is not None:
        raise PipelineError(f"report row {row['name']!r}: groups must be `mean`, not {row['groups']!r}")
    field = row.get("field", "score")  # e.g. chrf2 beside the chrF1 score
    if field not in m:
        raise PipelineError(f"report row {row['name']!r}: set {row['set']} has no figure {field!r}")
    return m[field]


def _row_metric(row: dict, metric: str) -> str:
    if row.get("groups_above"):
        return f"#(>{row['groups_above']})"
    return row["field"] if row.get("field") else metric


def _added_parameters(info: dict) -> tuple[int | None, str]:
    if "n_composition_parameters" in info:
        return info["n_composition_parameters"], "added (cross-attention)"
    if "n_trainable_parameters" in info:
        return info["n_trainable_parameters"], "trained (LoRA)"
    return info.get("n_parameters"), "trained (every weight)"


def _parity_line(world: str, cols: dict, runs: dict) -> list[str]:
    """CALM's added count beside each LoRA's trainable count; a LoRA matched to an older count is refused."""
    lines = []
    for title, name in cols.items():
        info = runs[title][0]["train_info"] if runs[title] else None
        if not info or "lora_match" not in info:
            continue
        ref_title = next((t for t, m in cols.items() if m == info["lora_match"]), info["lora_match"])
        ref = runs.get(ref_title) or []
        ref_count = ref[0]["train_info"].get("n_composition_parameters") if ref else None
        if ref_count is not None and ref_count != info["lora_match_parameters"]:
            raise PipelineError(f"{world}/{name} was matched to {info['lora_match_parameters']:,} parameters but "
                                f"{world}/{info['lora_match']} now adds {ref_count:,}: retrain it (dvc repro -f train@{world}/{name})")
        budget, trained = info["lora_match_parameters"], info["n_trainable_parameters"]
        targets = info.get("lora_target_modules")
        lines.append(f"parameter parity: {ref_title} adds {budget:,} parameters; {title} trains {trained:,} "
                     f"({100 * (trained - budget) / budget:+.2f}%; rank {info.get('lora_r')} on "
                     f"{targets if isinstance(targets, str) else ', '.join(targets)}; rule: within 2%)")
    return lines


# decimals a cell shows, by metric (else one): the issues' bits-per-byte bounds are 2% (~0.02), which one decimal hides
METRIC_DIGITS = {"bits_per_byte": 4}


def _fmt_cell(mean, std, n, paper=None, has_paper=False, digits=1) -> str:
    if not n:
        return "not run"
    text = f"**{mean:.{digits}f}**" + (f" ± {std:.{digits}f}" if std is not None else "")
    return text + (f" / {_fmt(paper)}" if has_paper else "")


def build_seed_table(table: str, params: dict) -> tuple[str, str, list[dict]]:
    """A table over seeds: cells mean +- std over every run of each column's model (model_runs), each column
    compared with the `reference` one: a difference is significant when both have >= 2 seeds and
    |mean - reference mean| > `significance` x the larger of their two stds. With `reference_fixed: true` the
    reference is one trained model that no sweep varies (the frozen anchor mB of Tables 2 and 4): the spread is
    then the compared column's alone (>= 2 seeds; the issue's "beyond the seed spread of the composition")."""
    tcfg = table_conf(table, params)
    reference, k = tcfg["reference"], float(tcfg.get("significance", 2.0))
    reference_fixed = bool(tcfg.get("reference_fixed", False))
    if reference_fixed:
        rule = (f"a difference from {reference} is marked † (beyond the seed spread) when the cell has >= 2 seeds and "
                f"|Δ mean| > {k:g} × its standard deviation ({reference} is one trained model, not varied by a sweep: "
                f"the spread is the compared model's own seeds; with a single seed it is not a finding)")
    else:
        rule = (f"a difference from {reference} is marked † (beyond the seed spread) when both cells have >= 2 seeds and "
                f"|Δ mean| > {k:g} × the larger of the two standard deviations; with fewer seeds it is not a finding")
    body, cells, missing = io.StringIO(), [], []
    for world, block in tcfg["blocks"].items():
        wcfg = params["worlds"][world]
        cols, models, sets = block["columns"], wcfg["models"], wcfg["evaluation"]["sets"]
        if reference not in cols:
            raise PipelineError(f"reports.{table}: reference column {reference!r} is not a column of block {world} "
                                f"({', '.join(cols)})")
        runs, notes = {}, []
        for title, name in cols.items():
            runs[title], n = model_runs(params, world, name)
            notes += n
            if not runs[title]:
                missing.append(f"{world}/{name}")
        rows = block["rows"] + block.get("extra_rows", [])
        has_paper = any(row.get("paper") for row in rows)
        body.write(f"\n## {world}\n")
        body.write("\n| task | metric | " + " | ".join(cols) + " |\n|---|---|" + "---|" * len(cols) + "\n")
        body.write("| seeds | | " + " | ".join(str(len(runs[t])) for t in cols) + " |\n")
        deltas = []
        for row in rows:
            if row["set"] not in sets:
                raise PipelineError(f"reports.{table}: row {row['name']!r} reads set {row['set']!r}, which world {world} does not evaluate")
            metric = _row_metric(row, (sets[row["set"]] or {}).get("metric", "exact_match"))
            ref_metrics = _metrics(world, row["groups_above"]) if row.get("groups_above") else None
            stats = {}
            for title in cols:
                values = [row_value(r["metrics"], row, ref_metrics) for r in runs[title]]
                values = [v for v in values if v is not None]
                stats[title] = (*_mean_std(values), len(values), [r["seed"] for r in runs[title]])
            line, delta_line = [], []
            for title, name in cols.items():
                mean, std, n, seeds = stats[title]
                rmean, rstd, rn, _ = stats[reference]
                delta = None if not n or not rn or title == reference else mean - rmean
                # one run has no measurable spread: a fixed reference counts as exact, any other gives no finding
                reference_spread = (rstd or 0.0) if rn >= 2 else 0.0
                significant = (delta is not None and n >= 2 and (rn >= 2 or reference_fixed)
                               and abs(delta) > k * max(std or 0.0, reference_spread))
                paper = (row.get("paper") or {}).get(title)
                cells.append({"table": table, "world": world, "task": row["name"], "set": row["set"], "metric": metric,
                              "model": title, "model_name": name, "ours": mean, "std": std, "n_seeds": n,
                              "seeds": " ".join(map(str, seeds)), "paper": paper,
                              "delta_vs_reference": delta, "significant": significant if delta is not None else None})
                digits = METRIC_DIGITS.get(metric, 1)
                line.append(_fmt_cell(mean, std, n, paper, has_paper, digits))
                if title != reference:
                    delta_line.append("-" if delta is None else f"{delta:+.{digits}f}" + (" †" if significant else ""))
            body.write(f"| {row['name']} | {METRIC_NAMES.get(metric, metric)} | " + " | ".join(line) + " |\n")
            deltas.append(f"| {row['name']} | " + " | ".join(delta_line) + " |")
        others = [t for t in cols if t != reference]
        body.write(f"\nDifference from {reference} (Δ = column − {reference}; † = beyond the seed spread):\n\n"
                   "| task | " + " | ".join(others) + " |\n|---|" + "---|" * len(others) + "\n" + "\n".join(deltas) + "\n\n")
        if block.get("note"):
            body.write(f"- {block['note']}\n")
        elif not has_paper:
            body.write("- the paper has no cells for this block\n")
        body.write(f"- {rule}\n")
        body.write(f"- preset `{params['preset']}`; global seed {params['seed']} (data, anchor replay); seeds per column "
                   "(the model's own seed: its init and data order): "
                   + "; ".join(f"{t} {', '.join(str(r['seed']) for r in runs[t]) or 'none'}" for t in cols) + "\n")
        sources = sorted({r["source"] for t in cols for r in runs[t]})
        body.write(f"- runs: {', '.join(sources) or 'none'} (default = the DVC stage's output; sweep = "
                   f"`python -m pipeline.sweep`, {sweeps_dir(world)}/<sweep>/)\n")
        for line in _parity_line(world, cols, runs):
            body.write(f"- {line}\n")
        for line in _paired_lines(world, block, rows, runs):
            body.write(f"- {line}\n")
        cost = []
        for title, name in cols.items():
            infos = [r["train_info"] for r in runs[title]]
            if not infos:
                continue
            count, what = _added_parameters(infos[0])
            # no training time: seconds are the machine's, and a report holds only what any machine reproduces
            # to the byte (issue 29); docs/performance.md keeps the times
            cost.append(f"{title} ({name}): {count:,} parameters {what}, {infos[0].get('steps')} steps"
                        + (", untrained" if infos[0].get("untrained") else ""))
        body.write("- per model: " + "; ".join(cost) + "\n")
        module = get_world(params, world)
        if hasattr(module, "report_lines"):
            summary = json.loads(require(data_dir(world) / SUMMARY_FILE, "upstream output").read_text())
            for line in module.report_lines(wcfg["data"], summary, wcfg):
                body.write(f"- {line}\n")
        for line in _grading_lines(sets, block["rows"] + block.get("extra_rows", [])):
            body.write(f"- {line}\n")
        body.write("- models: " + "; ".join(_model_line(n, models[n], models) for n in _models_behind(world, cols.values(), models)) + "\n")
        for note in notes:
            body.write(f"- {note}\n")
    md = io.StringIO()
    md.write(f"# {table}: {tcfg.get('title', '')}, preset `{params['preset']}`\n\n")
    if missing:
        md.write(f"**INCOMPLETE: no run yet of {', '.join(missing)}** (their cells say `not run`).\n\n")
    md.write("Each cell is the **mean** ± std over the seeds that exist (the `seeds` row counts them)"
             + (", then the paper's figure" if any(c["paper"] is not None for c in cells) else "") + "; greedy decoding.\n")
    md.write(body.getvalue())
    buf = io.StringIO()
    fields = ["table", "world", "task", "set", "metric", "model", "model_name", "ours", "std", "n_seeds", "seeds", "paper",
              "delta_vs_reference", "significant", "preset"]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for c in cells:
        w.writerow({**c, "preset": params["preset"]})
    return md.getvalue(), buf.getvalue(), cells
