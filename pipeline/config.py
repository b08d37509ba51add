"""Deprecated: split into pipeline.params (params I/O), pipeline.io (files), pipeline.cli, pipeline.errors and
pipeline.tracking. Kept only until every caller has moved."""
from pipeline.cli import cli  # noqa: F401
from pipeline.errors import PipelineError  # noqa: F401
from pipeline.io import (atomic_dir, atomic_write_json, atomic_write_jsonl, atomic_write_text,  # noqa: F401
                         fingerprint, read_jsonl, require)
from pipeline.params import compose_params, dump_params, load_params  # noqa: F401
from pipeline.tracking import wandb_enabled, wandb_run  # noqa: F401
