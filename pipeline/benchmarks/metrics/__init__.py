"""The project's metrics as Hugging Face `evaluate` modules, one folder each (`<name>/<name>.py`), loaded from this
directory and never from the hub:

    from pipeline.benchmarks.metrics import load_metric
    chrf = load_metric("chrf")      # evaluate.load("pipeline/benchmarks/metrics/chrf/chrf.py", keep_in_memory=True)
    chrf.compute(predictions=["the cat sat"], references=["the cat sat down"])    # {"chrf1": ..., "chrf2": ...}

    chrf          corpus chrF through sacrebleu: chrF1 (beta=1, the CALM paper's) and chrF2 (sacrebleu's default)
    exact_match   the prediction equals the reference, whitespace stripped (optionally cut at a separator first)
    gsm_accuracy  the completion's final number equals the gold number (GSM8K / MGSM extraction, per language)
    pass_at_k     the unbiased pass@k over the sandbox's verdicts on each problem's samples

pipeline/scoring.py (the evaluate stage) and pipeline/benchmarks/tasks.py score through these modules.
"""
from __future__ import annotations

from pathlib import Path

METRICS_DIR = Path(__file__).parent
# each module's script, named in full so that the stages that score list it among their code (pipeline/code_deps.py)
METRIC_SCRIPTS = {"chrf": "chrf/chrf.py", "exact_match": "exact_match/exact_match.py",
                  "gsm_accuracy": "gsm_accuracy/gsm_accuracy.py", "pass_at_k": "pass_at_k/pass_at_k.py"}


def load_metric(name: str):
    """The `evaluate` module `name` from this directory. Kept in memory: `evaluate`'s default on-disk cache is one
    file per module name, which two processes scoring at once (parallel stages, test workers) would share."""
    if name not in METRIC_SCRIPTS:
        raise ValueError(f"unknown metric {name!r}: one of {', '.join(METRIC_SCRIPTS)}")
    import evaluate  # here, not at the top: importing it takes seconds (it imports transformers' pipelines)

    return evaluate.load(str(METRICS_DIR / METRIC_SCRIPTS[name]), keep_in_memory=True)
