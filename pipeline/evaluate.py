"""Stage evaluate@<model>: exact-match accuracy, greedy decoding, batched, cached.

    python -m pipeline.evaluate <model>   -> reports/metrics/<model>.json  (DVC metrics)
                                             reports/predictions/<model>.jsonl

A prediction is the generated text up to <eos>; it is correct when it equals
the target string exactly (whitespace stripped).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from pipeline.config import PipelineError, atomic_write_json, atomic_write_jsonl, cli, load_params, read_jsonl, require, wandb_run
from pipeline.generation import generate_texts
from pipeline.tokenizer import load_tokenizer


def load_model(name: str):
    path = require(Path("models") / name, "upstream model")
    kind = (path / "pipeline_kind").read_text().strip() if (path / "pipeline_kind").exists() else "base"
    if kind == "composition":
        from pipeline.composition import CALMForCausalLM

        return CALMForCausalLM.from_pretrained(str(path))
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(path))


def generate(model, tokenizer, prompts, *, max_new_tokens, batch_size, progress=True):
    """Greedy, left-padded, cached batches through the project's one generation interface; stops at <eos>."""
    return generate_texts(
        model, tokenizer, prompts, max_new_tokens=max_new_tokens, stop=(), batch_size=batch_size,
        do_sample=False, progress=progress,
    )


def evaluate_model(model, tokenizer, datasets: dict[str, list[dict]], *, max_new_tokens: int, batch_size: int, progress=True, cut_at: dict | None = None):
    """-> (metrics {dataset: {accuracy, n}}, prediction rows).

    cut_at {dataset: string}: the prediction is graded up to the first occurrence of that
    string (e.g. KV-SUBS shares its prompt with a scratchpad KV-MATH, whose answer goes on
    after the substituted expression with "=" and the value)."""
    metrics, preds = {}, []
    cut_at = cut_at or {}
    for ds_name, rows in datasets.items():
        t0 = time.time()
        outs = generate(model, tokenizer, [r["prompt"] for r in rows], max_new_tokens=max_new_tokens, batch_size=batch_size, progress=progress)
        correct = 0
        for r, o in zip(rows, outs):
            o = o.replace(tokenizer.eos_token, "").strip()
            graded = o.split(cut_at[ds_name], 1)[0] if cut_at.get(ds_name) else o
            ok = graded == r["target"].strip()
            correct += ok
            preds.append({"dataset": ds_name, "prompt": r["prompt"], "target": r["target"], "prediction": o, "graded": graded, "correct": ok})
        metrics[ds_name] = {"accuracy": round(100.0 * correct / max(len(rows), 1), 2), "n": len(rows), "seconds": round(time.time() - t0, 1)}
        print(f"{ds_name}: {metrics[ds_name]['accuracy']:.1f}% exact match (n={len(rows)})", file=sys.stderr)
    return metrics, preds


@cli
def main(argv: list[str]) -> None:
    import torch

    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.evaluate <model>")
    name = argv[0]
    params = load_params()
    ecfg = params["evaluation"]
    if name not in ecfg["models"]:
        raise PipelineError(f"model {name!r} is not in evaluation.models ({', '.join(ecfg['models'])})")
    torch.set_num_threads(int(os.environ.get("CALM_THREADS", 2)))
    tok = load_tokenizer()
    model = load_model(name)
    model.eval()
    data = {d: read_jsonl(Path("data") / ecfg["world"] / f"{d}.jsonl") for d in ecfg["datasets"]}
    run = wandb_run(f"eval-{name}", "evaluate", {"model": name, **ecfg, "seed": params["seed"]}, params.get("wandb", {}).get("project", "calm-repro"))
    metrics, preds = evaluate_model(
        model, tok, data, max_new_tokens=ecfg["max_new_tokens"], batch_size=ecfg["batch_size"], cut_at=ecfg.get("cut_at") or {}
    )
    if run is not None:
        run.log({f"{d}/accuracy": m["accuracy"] for d, m in metrics.items()})
        run.finish()
    atomic_write_jsonl(Path("reports/predictions") / f"{name}.jsonl", preds)
    atomic_write_json(Path("reports/metrics") / f"{name}.json", {"model": name, "preset": params["preset"], "metrics": metrics})
    print(" ".join(f"{d}={m['accuracy']}" for d, m in metrics.items()))


if __name__ == "__main__":
    main()
