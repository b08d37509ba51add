"""`build(cfg, out_dir, seed)`: the code world's cfg checked, its splits drawn and written, and its summary."""
from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

import numpy as np

import pipeline.worlds.code.synthesis as synthesis
from pipeline.errors import PipelineError
from pipeline.io import atomic_write_json, atomic_write_jsonl
from pipeline.worlds.code.corpus import printable
from pipeline.worlds.code.dialect_rows import _dialect, _files_in_dialect
from pipeline.worlds.code.evaluation import _eval_key, _evaluation_side
from pipeline.worlds.code.real_benchmarks import (COMPOSITION_SOURCES, benchmark_sets, bits_per_byte_sets,
                                                 mbpp_train_rows)
from pipeline.worlds.code.tasks import (BENCHMARK_DEV_SETS, BENCHMARK_SETS, COMPOSITION_TASKS, EVAL_SET_MODES,
                                        EVALUATION_METRICS, MODEL_DATA, TASKS, WORLD, _rng, vocabulary)
from pipeline.worlds.code.training_rows import _plain_row, _synth_training, _task_row


def _check(cfg: dict) -> None:
    for key in ("benchmarks_dir", "eval_seed", "max_function_chars", "near_copy", "english", "synthetic",
                "capture", "c2t", "sizes", "mb", "composition"):
        if key not in cfg:
            raise PipelineError(f"code world: cfg lacks `{key}` (conf/world/code.yaml's worlds.code.data lists every key)")
    mode = cfg.get("eval_sets", "synthetic")
    if mode not in EVAL_SET_MODES:
        raise PipelineError(f"code world: eval_sets must be one of {', '.join(EVAL_SET_MODES)}, got {mode!r}")
    limits = cfg.get("benchmark_limits") or {}
    if not isinstance(limits, dict) or set(limits) - set(BENCHMARK_SETS) or any(
            v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1) for v in limits.values()):
        raise PipelineError(f"code world: benchmark_limits must map some of {', '.join(BENCHMARK_SETS)} to a positive "
                            f"number of items or null (all), got {limits!r}")
    offsets = cfg.get("benchmark_offsets") or {}
    if not isinstance(offsets, dict) or set(offsets) - set(BENCHMARK_SETS) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in offsets.values()):
        raise PipelineError(f"code world: benchmark_offsets must map some of {', '.join(BENCHMARK_SETS)} to a number "
                            f"of leading items to skip (>= 0), got {offsets!r}")
    tasks = cfg["composition"]["tasks"]
    if set(tasks) - set(COMPOSITION_TASKS) or not tasks or any(float(v) < 0 for v in tasks.values()) \
            or sum(float(v) for v in tasks.values()) <= 0:
        raise PipelineError(f"code world: composition.tasks must give non-negative shares of {COMPOSITION_TASKS}, "
                            f"got {tasks}")
    source = cfg["composition"].get("source", "code_train")
    if source not in COMPOSITION_SOURCES:
        raise PipelineError(f"code world: composition.source must be one of {', '.join(COMPOSITION_SOURCES)}, "
                            f"got {source!r}")
    mods = cfg.get("stdlib_modules")
    if mods is not None and (not isinstance(mods, list) or not mods or not all(isinstance(m, str) for m in mods)):
        raise PipelineError(f"code world: stdlib_modules must be null or a non-empty list of module names, got {mods!r}")
    fams = cfg["synthetic"]["families"]
    if not fams or set(fams) - set(synthesis.FAMILIES):
        raise PipelineError(f"code world: synthetic.families must be a non-empty subset of "
                            f"{list(synthesis.FAMILIES)}, got {fams}")
    if not 0 < float(cfg["composition"]["fraction"]) <= 1 or not 0 <= float(cfg["mb"]["code_fraction"]) <= 1:
        raise PipelineError("code world: composition.fraction must be in (0, 1] and mb.code_fraction in [0, 1]")
    dev = cfg.get("benchmark_dev") or {}
    if not isinstance(dev, dict) or set(dev) - set(BENCHMARK_DEV_SETS) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in dev.values()):
        raise PipelineError(f"code world: benchmark_dev must map some of {', '.join(BENCHMARK_DEV_SETS)} to a positive "
                            f"number of items, got {dev!r}")
    for split in dev:
        test = BENCHMARK_DEV_SETS[split]
        if mode != "benchmarks" or limits.get(test) is None:
            raise PipelineError(f"code world: benchmark_dev.{split} takes the items after {test}'s subset: it needs "
                                f"eval_sets: benchmarks and a benchmark_limits.{test}")
    bpb = cfg.get("bits_per_byte")
    if bpb is not None:
        if not isinstance(bpb, dict) or set(bpb) - {"code", "prose"} or not isinstance(bpb.get("code", False), bool) \
                or isinstance(bpb.get("prose", 0), bool) or not isinstance(bpb.get("prose", 0), int) or bpb.get("prose", 0) < 0:
            raise PipelineError(f"code world: bits_per_byte must be {{code: true|false, prose: <number of texts>}}, got {bpb!r}")
        if bpb.get("code") and mode != "benchmarks":
            raise PipelineError("code world: bits_per_byte.code scores the benchmarks' reference solutions: it needs "
                                "eval_sets: benchmarks")
    _dialect(cfg)   # a bad dialect block fails here, in one line


def _stats(rows: list[dict]) -> dict:
    lens = [len(r["prompt"]) + len(r["target"]) for r in rows]
    if not lens:
        return {"rows": 0}
    return {"rows": len(rows), "chars": sum(lens), "min": min(lens), "median": float(statistics.median(lens)),
            "mean": round(sum(lens) / len(lens), 1), "p95": float(np.percentile(lens, 95)), "max": max(lens),
            "target_max": max(len(r["target"]) for r in rows)}


def _assert_vocabulary(files: dict[str, list[dict]]) -> None:
    vocab = set(vocabulary())
    for name, rows in files.items():
        for r in rows:
            for k, v in r.items():
                if isinstance(v, str) and (not set(v) <= vocab or not printable(v)):
                    bad = sorted(set(v) - vocab)
                    raise PipelineError(f"code world: {name} row {r.get('id')} field {k} has characters outside the "
                                        f"vocabulary {bad} or a special-token string")


def _in_vocabulary(row: dict) -> bool:
    vocab = set(vocabulary())
    return all(set(v) <= vocab and printable(v) for v in row.values() if isinstance(v, str))


def build(cfg: dict, out_dir: str | Path, seed: int) -> dict:
    """Write the world's splits under out_dir; returns the summary (also written as summary.json)."""
    _check(cfg)
    out = Path(out_dir)
    ev = _evaluation_side(_eval_key(cfg))
    bench_code, bench_prose = ev["bench_index"]
    exclusion = Counter(ev["exclusion"])
    sz = cfg["sizes"]

    # code_train: stdlib functions and synthesized functions, interleaved in a seeded order
    rng = _rng(seed, "code_train")
    funcs = ev["functions"]
    n_std = len(funcs) if sz.get("code_stdlib") is None else min(int(sz["code_stdlib"]), len(funcs))
    std = [funcs[i] for i in sorted(rng.choice(len(funcs), size=n_std, replace=False))]
    syn = _synth_training(ev["structures"], int(sz["code_synthetic"]), _rng(seed, "synthetic"), bench_code,
                          bench_prose, exclusion)
    styles = _rng(seed, "style").random(len(syn)) < float(cfg["synthetic"].get("t2c_style_fraction", 0.0))
    items = [("stdlib", f) for f in std] + [("synthetic", (s, ex, bool(st))) for (s, ex), st in zip(syn, styles)]
    items = [items[i] for i in rng.permutation(len(items))]

    code_train = [_plain_row(it) for it in items]
    code_chars = sum(len(r["target"]) for r in code_train)

    # D_C: task rows over code_train items until composition.fraction of code_train's characters
    comp = cfg["composition"]
    dc_source = comp.get("source", "code_train")
    # (a benchmark's training split as D_C: no share of code_train is drawn, the loop below takes nothing)
    shares = {t: float(v) for t, v in comp["tasks"].items() if float(v) > 0} if dc_source == "code_train" else {}
    budget = float(comp["fraction"]) * code_chars
    total_share = sum(shares.values())
    order = [items[i] for i in _rng(seed, "composition").permutation(len(items))]
    # the four task formats always (format_train draws from them), plain code only when D_C holds some
    queued = TASKS + tuple(t for t in shares if t not in TASKS)
    queues = {t: [r for r in (_task_row(t, it) for it in order) if r] for t in queued}
    used_ids = set()
    composition, spent = [], {t: 0 for t in shares}
    pos = {t: 0 for t in queued}
    while True:
        # the task furthest below its share of the budget takes the next row
        open_tasks = [t for t in shares if spent[t] < budget * shares[t] / total_share and pos[t] < len(queues[t])]
        if not open_tasks:
            break
        t = min(open_tasks, key=lambda t: (spent[t] / shares[t], t))
        r = queues[t][pos[t]]
        pos[t] += 1
        if r["id"] in used_ids:
            continue
        used_ids.add(r["id"])
        composition.append(r)
        spent[t] += len(r["prompt"]) + len(r["target"])
    dropped_near_copies = []
    if dc_source == "mbpp_train":
        composition, dropped_near_copies = mbpp_train_rows(cfg)

    # format_train: per task, rows over items not used by D_C
    format_train = []
    for t in TASKS:
        rows = [r for r in queues[t][pos[t]:] if r["id"] not in used_ids][:int(sz["format_per_task"])]
        format_train += rows
    format_train = [format_train[i] for i in _rng(seed, "format").permutation(len(format_train))]

    # mB's little code
    n_mb = round(float(cfg["mb"]["code_fraction"]) * len(code_train))
    mb_idx = sorted(_rng(seed, "mb_code").choice(len(code_train), size=n_mb, replace=False)) if n_mb else []
    mb_code_train = [code_train[i] for i in mb_idx]

    # English
    eng_rng = _rng(seed, "english")
    english_rows, english_info = [], {}
    for source, key in (("gsm8k_train_questions", "english_gsm8k"), ("python_docstrings", "english_docstrings")):
        pool = ev["english"].get(source, [])
        want = len(pool) if sz.get(key) is None else min(int(sz[key]), len(pool))
        picked = [pool[i] for i in sorted(eng_rng.choice(len(pool), size=want, replace=False))] if want else []
        english_rows += [{"prompt": "", "target": u, "source": source} for u in picked]
        english_info[source] = {"pool": len(pool), "rows": want, "chars": sum(map(len, picked))}
    english_rows = [english_rows[i] for i in eng_rng.permutation(len(english_rows))]

    evaluation = dict(ev["evaluation"])
    real = {}
    if cfg.get("eval_sets", "synthetic") == "benchmarks":
        real = benchmark_sets(cfg)
        evaluation.update(real)
    scored_texts = bits_per_byte_sets(cfg, real, ev["english"], english_rows) if cfg.get("bits_per_byte") else {}
    evaluation.update(scored_texts)
    files = {"english_train": english_rows, "code_train": code_train, "mb_code_train": mb_code_train,
             "format_train": format_train, "composition_train": composition, **evaluation}
    dialect = _dialect(cfg)
    if dialect is not None:   # the rows drawn above, their Python renamed (the summary's figures stay the plain ones)
        files, dialect_summary = _files_in_dialect(files, set(evaluation), dialect)
    # the real benchmarks are for a pretrained tokenizer: the summary counts their rows outside the vocabulary
    # (so is a D_C drawn from a benchmark's training split)
    benchmark_text = set(real) | set(scored_texts) | ({"composition_train"} if dc_source != "code_train" else set())
    _assert_vocabulary({k: v for k, v in files.items() if k not in benchmark_text})
    for name, rows in files.items():
        atomic_write_jsonl(out / f"{name}.jsonl", rows)

    dc_chars = sum(len(r["prompt"]) + len(r["target"]) for r in composition)
    summary = {
        "world": WORLD,
        "seed": seed,
        "eval_seed": cfg["eval_seed"],
        "python": sys.version.split()[0],
        "stdlib": ev["corpus"],
        "vocabulary": "".join(vocabulary(cfg)),
        "max_chars": max(len(r["prompt"]) + len(r["target"]) for rows in files.values() for r in rows),
        "stop_safe": ["\n\n"],
        "files": {name: _stats(rows) for name, rows in files.items()},
        "code_train_sources": dict(sorted(Counter(r["source"] for r in code_train).items())),
        "composition": {"code_train_chars": code_chars, "chars": dc_chars,
                        "fraction_of_code_train": round(dc_chars / max(code_chars, 1), 4),
                        "tasks": dict(sorted(Counter(r["task"] for r in composition).items()))}
        | ({"source": dc_source, "near_copies_dropped": dropped_near_copies} if dc_source != "code_train" else {}),
        "format_train_tasks": dict(sorted(Counter(r["task"] for r in format_train).items())),
        "english": english_info,
        "held_out": {"cc_stdlib_candidates": ev["cc_stdlib_candidates"], "c2t_pool": ev["c2t_pool"],
                     "synthetic_viable_structures": ev["n_viable_structures"],
                     "synthetic_held_out_structures": ev["held_structures"],
                     "synthetic_training_structures": len(ev["structures"])},
        "benchmarks": {"items": ev["benchmark_counts"], "near_copy": cfg["near_copy"],
                       "hits_by_benchmark": ev["benchmark_hits"]},
        "exclusion": dict(sorted(exclusion.items())),
        "groups": {name: dict(sorted(Counter(r.get("group") for r in rows).items()))
                   for name, rows in evaluation.items()},
        "model_data": MODEL_DATA,
        "evaluation_metrics": EVALUATION_METRICS,
    }
    if real:   # (only then: the synthetic build's summary stays byte-identical to what it was before the option)
        summary["eval_sets"] = "benchmarks"
        offsets = cfg.get("benchmark_offsets") or {}   # recorded only when set: other summaries stay as they were
        dev = cfg.get("benchmark_dev") or {}
        summary["benchmark_sets"] = {split: {"benchmark": BENCHMARK_SETS[BENCHMARK_DEV_SETS.get(split, split)],
                                             "rows": len(rows),
                                             "limit": {**(cfg.get("benchmark_limits") or {}), **dev}.get(split),
                                             "rows_outside_vocabulary": sum(not _in_vocabulary(r) for r in rows)}
                                     | ({"offset": offsets[split]} if offsets.get(split) else {})
                                     | ({"offset": offsets.get(BENCHMARK_DEV_SETS[split], 0)
                                         + cfg["benchmark_limits"][BENCHMARK_DEV_SETS[split]]} if split in dev else {})
                                     for split, rows in real.items()}
    if scored_texts:   # (only then, as above)
        summary["bits_per_byte_sets"] = {name: {"rows": len(rows), "bytes": sum(len(r["target"].encode()) for r in rows),
                                                "groups": dict(sorted(Counter(r["group"] for r in rows).items()))}
                                         for name, rows in scored_texts.items()}
    if dialect is not None:   # (only then: the plain build's summary stays byte-identical)
        summary["dialect"] = dialect_summary
    atomic_write_json(out / "summary.json", summary)
    return summary
