"""Stage evaluate@<world>/<model>: one model on its world's evaluation sets, each with its metric.

    python -m pipeline.evaluate <world>/<model>  -> reports/<world>/metrics/<model>.json      (DVC metrics)
                                                    reports/<world>/predictions/<model>.jsonl

Generation is batched, left-padded and cached-KV (pipeline/generation.py), greedy unless a set asks for
samples (`n_samples` > 1, for pass@k); scoring is pipeline/scoring.py (exact match, chrF, GSM accuracy,
sandboxed pass@k).

Under several processes (torchrun, accelerate launch; pipeline/distributed.py) greedy generation is shared between
them by whole batches and gathered in order (pipeline/generation.py); the main process alone scores, computes
likelihood metrics, and writes the same predictions and metrics files one process writes.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from pipeline import distributed
from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.generation import generate_and_score
from pipeline.io import atomic_write_json, atomic_write_jsonl, read_jsonl
from pipeline.layout import metrics_path, model_dir, predictions_path, split_file, tokenizer_dir
from pipeline.params import load_params, model_spec
from pipeline.scoring import LIKELIHOOD_METRICS, get_metric
from pipeline.stages import evaluated_models
from pipeline.tracking import wandb_run


def per_item_outcomes(rows: list[dict], records: list[dict]) -> dict[str, int]:
    """{row id: 1 if its first completion passed (pass_at_k) or was correct, else 0}: what a paired test over items
    reads (a set that asks for it with `per_item: true`; its rows need unique ids)."""
    ids = [r.get("id") for r in rows]
    if None in ids or len(set(ids)) != len(ids):
        raise PipelineError("evaluation set with per_item: true needs a unique `id` on every row")
    out = {}
    for i, rec in zip(ids, records):
        if "passed" in rec:
            out[str(i)] = int(bool(rec["passed"][0]))
        elif "correct" in rec:
            out[str(i)] = int(bool(rec["correct"]))
        else:
            raise PipelineError("per_item: true is for pass_at_k and exact-match-like metrics (one verdict per row)")
    return out


def evaluate_sets(model, tokenizer, sets: dict[str, list[dict]], ecfg: dict, *, progress=True):
    """-> (metrics {set: summary}, prediction records) for rows already loaded."""
    metrics, records = {}, []
    for set_name, rows in sets.items():
        scfg = ecfg["sets"][set_name] or {}
        scorer = get_metric(scfg.get("metric", "exact_match"))
        if scfg.get("metric") in LIKELIHOOD_METRICS:  # the model's probabilities of the rows' text: nothing generated
            if not distributed.is_main():
                continue
            t0 = time.time()
            summary, per_row = scorer(model, tokenizer, rows, scfg)
            metrics[set_name] = {"metric": scfg["metric"], **summary, "n": len(rows), "seconds": round(time.time() - t0, 1)}
            records += [{"set": set_name, **({"id": r["id"]} if "id" in r else {}), **rec} for r, rec in zip(rows, per_row)]
            print(f"{set_name}: {metrics[set_name]['score']:.4f} {scfg['metric']} (n={len(rows)})", file=sys.stderr)
            continue
        n_samples = int(scfg.get("n_samples", 1))
        for key in ("max_new_tokens", "batch_size"):
            if scfg.get(key) is None and ecfg.get(key) is None:
                raise PipelineError(f"evaluation set {set_name}: no {key} (set it on the set or on the world's evaluation)")
        t0 = time.time()
        scored = generate_and_score(
            model, tokenizer, [r["prompt"] for r in rows], lambda completions: scorer(rows, completions, scfg),
            max_new_tokens=int(scfg.get("max_new_tokens", ecfg["max_new_tokens"])), stop=scfg.get("stop") or (),
            batch_size=int(scfg.get("batch_size", ecfg["batch_size"])), do_sample=n_samples > 1,
            temperature=float(scfg.get("temperature", 1.0)), num_return_sequences=n_samples, progress=progress,
            num_beams=int(scfg.get("num_beams", ecfg.get("num_beams", 1))),
            desc=set_name, distribute=True, strip_eos=True,
        )
        if scored is None:  # another process than the main one, which alone scores and writes
            continue
        summary, per_row = scored
        metrics[set_name] = {"metric": scfg.get("metric", "exact_match"), **summary, "n": len(rows),
                             "seconds": round(time.time() - t0, 1)}
        if scfg.get("per_item"):  # each row's outcome, for the report's paired tests (pipeline/seed_tables.py)
            metrics[set_name]["per_item"] = per_item_outcomes(rows, per_row)
        for r, rec in zip(rows, per_row):
            records.append({"set": set_name, **({"id": r["id"]} if "id" in r else {}), "prompt": r["prompt"],
                            "target": r["target"], **rec})
        print(f"{set_name}: {metrics[set_name]['score']:.1f} {metrics[set_name]['metric']} (n={len(rows)})", file=sys.stderr)
    return metrics, records


def evaluation_model(params: dict, world: str, name: str, folder=None):
    """(model in eval mode, tokenizer) of model `name` of `world` as its evaluation reads it: the world's tokenizer,
    or the model's own where its training saved the one it read (lineage.declared_tokenizer). `folder`: another
    folder trained with `name`'s conf (a sweep's seed), instead of the stage's."""
    from pipeline.training.kinds import load_model
    from pipeline.training.lineage import declared_tokenizer

    folder = Path(folder) if folder is not None else model_dir(world, name)
    own = declared_tokenizer(params, world, name) is not None
    model, tokenizer = load_model(folder, tokenizer=folder if own else tokenizer_dir(world), trained=True)
    return model.eval(), tokenizer


def evaluate(params: dict, key: str) -> dict:
    import torch

    from pipeline.training.trainer import require_device, set_threads

    world, name, _ = model_spec(params, key)
    if name not in evaluated_models(params, world):
        raise PipelineError(f"model {key} is not evaluated: no report names it and it does not say evaluate: true")
    ecfg = params["worlds"][world]["evaluation"]
    runtime = params.get("runtime") or {}
    require_device(runtime)
    distributed.start(runtime)
    set_threads(runtime)
    model, tokenizer = evaluation_model(params, world, name)
    if runtime.get("device") == "cuda":
        model.to("cuda")
        if runtime.get("precision") == "bf16":
            model.to(torch.bfloat16)
    sets = {s: read_jsonl(split_file(world, s)) for s in ecfg["sets"]}
    run = wandb_run(f"eval-{key}", "evaluate", {"model": key, **ecfg, "seed": params["seed"]},
                    params.get("wandb", {}).get("project", "calm-repro")) if distributed.is_main() else None
    metrics, records = evaluate_sets(model, tokenizer, sets, ecfg)
    if not distributed.is_main():
        distributed.finish()  # wait for the main process to write
        return metrics
    if run is not None:
        run.log({f"{s}/{m['metric']}": m["score"] for s, m in metrics.items()})
        run.finish()
    atomic_write_jsonl(predictions_path(world, name), records)
    # scores only: the metrics file is what `dvc metrics diff` compares and git publishes, and timings differ per run
    scores = {s: {k: v for k, v in m.items() if k != "seconds"} for s, m in metrics.items()}
    atomic_write_json(metrics_path(world, name), {"model": name, "world": world, "preset": params["preset"], "metrics": scores})
    distributed.finish()
    return metrics


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1 or "/" not in argv[0]:
        raise PipelineError("usage: python -m pipeline.evaluate <world>/<model>")
    metrics = evaluate(load_params(), argv[0])
    print(" ".join(f"{s}={m['score']}" for s, m in metrics.items()))


if __name__ == "__main__":
    main()
