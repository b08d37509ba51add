"""Where the pipeline's stages read and write, relative to the workspace root: the one home of every output path.

    data/<world>/<split>.jsonl, summary.json            build_data@<world>
    data/<world>.synthesized/<name>/rows.jsonl, ...     synthesize@<world>/<name> (a set one of its models makes)
    models/<world>/tokenizer/                           build_tokenizer@<world>
    models/<world>/<model>/                             train@<world>/<model>
    reports/<world>/metrics/<model>.json                evaluate@<world>/<model> (DVC metrics)
    reports/<world>/predictions/<model>.jsonl           evaluate@<world>/<model>
    reports/<table>.md, reports/<table>.csv             report@<table>
    reports/<figure>.png, reports/<figure>.csv          figure@<figure>
    reports/<world>/sweeps/<sweep>/<model>-seed<k>/     python -m pipeline.sweep: one Hydra job each, run.json last
    models/.checkpoints/, models/.runs/, models/.cache/ not DVC outputs (.dvcignore'd, gitignored via /models/*)

Paths only, and no import from the pipeline: every layer may read it (tests/unit/test_layers.py).
"""
from __future__ import annotations

from pathlib import Path

DATA = Path("data")
MODELS = Path("models")
REPORTS = Path("reports")

CHECKPOINTS = MODELS / ".checkpoints"    # Trainer checkpoints of a training stage, resumed after a kill
RUN_LOGS = MODELS / ".runs"              # each model's last training time (run_log_path)
MODELS_CACHE = MODELS / ".cache"         # shared by the sweep jobs
TOKENIZED_CACHE = MODELS_CACHE / "tokenized"  # tokenised training data (pipeline/training/data.py)

SUMMARY_FILE = "summary.json"  # beside a world's splits: what build_data made
SWEEPS = "sweeps"
RUN_FILE = "run.json"  # a sweep run's record, written last: a run without it is unfinished and never counted


def data_dir(world: str) -> Path:
    return DATA / world


SYNTHESIZED = "synthesized/"  # a data stem `synthesized/<name>` names the set synthesize@<world>/<name> writes


def synthesized_dir(world: str, name: str) -> Path:
    """A synthesized set's folder: beside data/<world>/ (not in it, which build_data@<world> owns whole)."""
    return DATA / f"{world}.synthesized" / name


def split_file(world: str, split: str) -> Path:
    """A training or evaluation split's file: data/<world>/<split>.jsonl, or the rows of a synthesized set."""
    if split.startswith(SYNTHESIZED):
        return synthesized_dir(world, split[len(SYNTHESIZED):]) / "rows.jsonl"
    return data_dir(world) / f"{split}.jsonl"


def tokenizer_dir(world: str) -> Path:
    return MODELS / world / "tokenizer"


def model_dir(world: str, name: str) -> Path:
    return MODELS / world / name


def run_log_path(world: str, name: str) -> Path:
    """How the last training of a model went (its seconds, the checkpoint it resumed from), kept beside the model
    rather than in it: the model's folder then holds only what the run computed, so its DVC hash is the same for an
    uninterrupted run, a resumed one and a stranger's rerun on the same float path (downstream stages do not rerun)."""
    return RUN_LOGS / world / f"{name}.json"


def metrics_path(world: str, name: str) -> Path:
    return REPORTS / world / "metrics" / f"{name}.json"


def predictions_path(world: str, name: str) -> Path:
    return REPORTS / world / "predictions" / f"{name}.jsonl"


def table_path(table: str, suffix: str) -> Path:
    """reports/<table>.md or .csv."""
    return REPORTS / f"{table}{suffix}"


def figure_path(name: str) -> Path:
    """reports/<figure>.png (its table beside it, .csv)."""
    return REPORTS / f"{name}.png"


def sweeps_dir(world: str) -> Path:
    return REPORTS / world / SWEEPS


def sweep_run_name(model: str, seed) -> str:
    """A sweep run's folder under reports/<world>/sweeps/<sweep>/ (`seed` may be a Hydra interpolation)."""
    return f"{model}-seed{seed}"
