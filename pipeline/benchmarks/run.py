"""Evaluate one model on one benchmark: generate, score, write metrics JSON + predictions JSONL.

Outputs (in <output_dir>/<benchmark>/):
  metrics.json            the figures, the protocol used, counts and timings
  predictions.jsonl       one record per scored item (completion, extraction, verdict)
  generations_cache.jsonl completions by (model, prompt, settings): a re-run reuses them
Both result files are written to a temporary name and renamed, so a file that exists is
complete.

Under several processes (`torchrun` or `accelerate launch` of `python -m pipeline.benchmarks`; pipeline/distributed.py)
generation is shared between them by whole batches and gathered in the prompts' order; the main process alone
scores, writes the cache and the result files, which are the files one process writes.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from pipeline import distributed
from pipeline.benchmarks.errors import BenchmarkError
from pipeline.io import atomic_write_text
from pipeline.sandbox.harness import isolation_level
from pipeline.benchmarks.tasks import _CodeTask, build_task, resolve_local_path
from pipeline.generation import GenerationCache, generate_and_score


def evaluate(benchmark_config: dict, model, tokenizer, model_id: str, *,
             output_dir: str | Path, limit: int | None = None, batch_size: int = 8,
             data_root: str | Path | None = None, progress: bool = True,
             use_cache: bool = True) -> dict | None:
    """Run one benchmark end to end and return its metrics (also written to disk); None on the other processes
    of a several-process run, which only generate their share."""
    config = resolve_local_path(benchmark_config, data_root)
    task = build_task(config)
    name = config["name"]
    out = Path(output_dir) / name
    started = time.monotonic()
    items = task.items(limit=limit)
    if not items:
        raise BenchmarkError(f"{name}: no items to evaluate")
    cache = GenerationCache(out / "generations_cache.jsonl", model_id) if use_cache else None
    generation_s = None

    def score(completions):
        nonlocal generation_s
        generation_s = time.monotonic() - started  # the runner scores as soon as the completions are there
        if isinstance(task, _CodeTask):
            return task.score(items, completions, progress=progress)
        return task.score(items, completions)

    scored = generate_and_score(
        model, tokenizer, [item.prompt for item in items], score, distribute=True,
        max_new_tokens=task.max_new_tokens, stop=task.stop, batch_size=batch_size,
        do_sample=bool(config.get("do_sample", False)), temperature=float(config.get("temperature", 1.0)),
        num_return_sequences=task.n_samples, seed=int(config.get("seed", 0)), cache=cache,
        num_beams=int(config.get("num_beams", 1)),
        progress=progress, desc=f"{name}: generating")
    if scored is None:  # not the main process: its share is generated and gathered
        return None
    metrics, records = scored
    result = {
        "benchmark": name, "model": model_id, "limit": limit, "n_items": len(items),
        "metrics": metrics, "protocol": config,
        "sandbox_isolation": isolation_level() if isinstance(task, _CodeTask) else None,
        "seconds": {"generation": round(generation_s, 2),
                    "total": round(time.monotonic() - started, 2)},
    }
    for record, item in zip(records, items):
        record["prompt"] = item.prompt
    atomic_write_text(out / "predictions.jsonl", "".join(
        json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    atomic_write_text(out / "metrics.json", json.dumps(result, indent=2, ensure_ascii=False))
    return result
