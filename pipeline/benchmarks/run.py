"""Evaluate one model on one benchmark: generate, score, write metrics JSON + predictions JSONL.

Outputs (in <output_dir>/<benchmark>/):
  metrics.json            the figures, the protocol used, counts and timings
  predictions.jsonl       one record per scored item (completion, extraction, verdict)
  generations_cache.jsonl completions by (model, prompt, settings): a re-run reuses them
Both result files are written to a temporary name and renamed, so a file that exists is
complete.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from pipeline.benchmarks.errors import BenchmarkError
from pipeline.io import atomic_write_text
from pipeline.sandbox.harness import isolation_level
from pipeline.benchmarks.tasks import _CodeTask, build_task, resolve_local_path
from pipeline.generation import GenerationCache, generate_texts


def load_model(spec: dict):
    """(model, tokenizer, model_id) from a model spec; the one place that loads models.

    spec.path: a local folder holding one of
      * a saved CALM composition (config.json with model_type "calm"): loaded with
        pipeline.composition.CALMForCausalLM, its bases from the paths its config names,
        the tokenizer from the anchor (whose vocabulary the composition predicts);
      * a Hugging Face causal-LM checkpoint (mA, mB, a fine-tuned or merged model);
      * a GGUF file named by spec.gguf_file.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import torch

    path = spec.get("path")
    if not path:
        raise BenchmarkError("no model given: set model.path (and model.gguf_file for GGUF)")
    if not Path(path).exists():
        raise BenchmarkError(f"model.path {path!r} does not exist")
    gguf_file = spec.get("gguf_file")
    dtype = getattr(torch, spec.get("dtype") or "float32")
    device = spec.get("device") or "cpu"
    model_id = str(Path(path).resolve()) + (f"::{gguf_file}" if gguf_file else "")
    config_file = Path(path) / "config.json"
    if not gguf_file and config_file.is_file() and \
            json.loads(config_file.read_text()).get("model_type") == "calm":
        from pipeline.composition import CALMForCausalLM, load_tokenizer
        try:
            model = CALMForCausalLM.from_pretrained(path, dtype=dtype)
            anchor = model.config.anchor or {}
            tokenizer = load_tokenizer(anchor.get("name_or_path"), anchor.get("gguf_file"))
        except Exception as error:  # noqa: BLE001 - the composition's own one-line errors
            raise BenchmarkError(f"cannot load the composition at {path}: {error}") from None
        return model.to(device).eval(), tokenizer, model_id
    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
    return model.to(device).eval(), tokenizer, model_id


def evaluate(benchmark_config: dict, model, tokenizer, model_id: str, *,
             output_dir: str | Path, limit: int | None = None, batch_size: int = 8,
             data_root: str | Path | None = None, progress: bool = True,
             use_cache: bool = True) -> dict:
    """Run one benchmark end to end and return its metrics (also written to disk)."""
    config = resolve_local_path(benchmark_config, data_root)
    task = build_task(config)
    name = config["name"]
    out = Path(output_dir) / name
    started = time.monotonic()
    items = task.items(limit=limit)
    if not items:
        raise BenchmarkError(f"{name}: no items to evaluate")
    cache = GenerationCache(out / "generations_cache.jsonl", model_id) if use_cache else None
    n_samples = task.n_samples
    do_sample = bool(config.get("do_sample", False))
    generated = generate_texts(
        model, tokenizer, [item.prompt for item in items],
        max_new_tokens=task.max_new_tokens, stop=task.stop, batch_size=batch_size,
        do_sample=do_sample, temperature=float(config.get("temperature", 1.0)),
        num_return_sequences=n_samples, seed=int(config.get("seed", 0)), cache=cache,
        progress=progress, desc=f"{name}: generating")
    completions = generated if n_samples > 1 else [[text] for text in generated]
    generation_s = time.monotonic() - started
    if isinstance(task, _CodeTask):
        metrics, records = task.score(items, completions, progress=progress)
    else:
        metrics, records = task.score(items, completions)
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
