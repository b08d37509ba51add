"""Worlds: each builds its datasets from its params section (`worlds.<name>`).

A world module exposes `build(cfg, out_dir, seed) -> summary` and
`vocabulary(cfg) -> list[str]` (the characters its tokenizer must know).
Later worlds of the paper (low-resource languages, code) register here.
"""
from __future__ import annotations

import importlib

from pipeline.config import PipelineError

WORLDS = {"kv_arithmetic": "pipeline.worlds.kv_arithmetic"}


def get_world(name: str):
    if name not in WORLDS:
        raise PipelineError(f"unknown world {name!r}: choose one of {', '.join(WORLDS)}")
    return importlib.import_module(WORLDS[name])
