"""Weights & Biases: offline by default (no account needed; `wandb sync wandb/` later), one run per stage."""
from __future__ import annotations

import os


def wandb_enabled() -> bool:
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_DIR", os.getcwd())  # -> ./wandb/ (gitignored, .dvcignore'd)
    os.environ.setdefault("WANDB_SILENT", "true")
    return os.environ["WANDB_MODE"] != "disabled"


def wandb_run(name: str, group: str, config: dict, project: str):
    """A wandb run (or None when WANDB_MODE=disabled)."""
    if not wandb_enabled():
        return None
    import wandb

    return wandb.init(project=project, name=name, group=group, config=config, reinit="finish_previous")
