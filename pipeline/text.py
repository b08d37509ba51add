"""Text helpers shared by generation and the benchmarks' scoring (kept here so neither imports the other)."""
from __future__ import annotations


def truncate_at_stop(text: str, stop: list[str] | tuple[str, ...]) -> str:
    """Cut `text` at the earliest occurrence of any stop sequence."""
    cut = len(text)
    for sequence in stop:
        if sequence:
            position = text.find(sequence)
            if position != -1:
                cut = min(cut, position)
    return text[:cut]
