"""What every benchmark task shares: an evaluation item (`EvalItem`), the Task interface (items, generation
settings, scoring), the per-group subsample and the seeded choice of few-shot exemplars."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pipeline.benchmarks.errors import BenchmarkError
from pipeline.benchmarks.extraction import truncate_at_stop


@dataclass
class EvalItem:
    id: str
    prompt: str
    reference: Any  # what a perfect answer is scored against (text, number, solution)
    group: str = ""  # language, for benchmarks reported per language
    extra: dict = field(default_factory=dict)  # scoring inputs (e.g. unit tests)


class Task:
    """A benchmark: its items and how completions are scored."""

    name = ""
    default_stop: tuple[str, ...] = ()

    def __init__(self, config: dict):
        self.config = config
        self.stop = list(config.get("stop", self.default_stop))
        self.max_new_tokens = int(config.get("max_new_tokens", 256))
        self.n_samples = int(config.get("n_samples", 1))
        data = config.get("data") or {}
        self.local = data.get("local_dir") or data.get("local_file")
        self.hub_id = data.get("hub_id")

    def items(self, limit: int | None = None) -> list[EvalItem]:
        raise NotImplementedError

    def postprocess(self, completion: str) -> str:
        return truncate_at_stop(completion, self.stop)

    def score(self, items: list[EvalItem], completions: list[list[str]]
              ) -> tuple[dict, list[dict]]:
        """Metrics, and one record per item (saved as the predictions JSONL)."""
        raise NotImplementedError


def _limit_per_group(items: list[EvalItem], limit: int | None) -> list[EvalItem]:
    """The first `limit` items of each group (language), keeping order."""
    if limit is None:
        return items
    if limit < 1:
        raise BenchmarkError(f"limit must be a positive number of items, got {limit}")
    counts: dict[str, int] = {}
    kept = []
    for item in items:
        counts[item.group] = counts.get(item.group, 0) + 1
        if counts[item.group] <= limit:
            kept.append(item)
    return kept


def _exemplar_indices(n_rows: int, n_shots: int, seed: int) -> list[int]:
    if not 0 <= n_shots < n_rows:
        raise BenchmarkError(f"n_shots={n_shots} must be between 0 and {n_rows - 1}")
    return random.Random(seed).sample(range(n_rows), n_shots)
