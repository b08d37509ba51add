"""Answer extraction from model completions."""
from __future__ import annotations

import re

from pipeline.text import truncate_at_stop  # noqa: F401  (re-exported: the benchmarks cut completions with it)

# A number as models and people write it: optional sign, digits with optional thousands
# separators (comma, or the thin/no-break spaces some languages use), optional decimals.
_NUMBER = re.compile(
    r"(?:(?<![0-9A-Za-z])-)?"  # a minus sign, but not the hyphen of "10-20" or "x-1"
    r"(?<![0-9.])"  # start at the first digit (not inside a number); CJK text may precede
    r"(?:\d{1,3}(?:[,\u00a0\u202f\u2009]\d{3})+(?:\.\d+)?"  # 1,234,567.89
    r"|\d*\.\d+"  # 3.5, .5
    r"|\d+)"
    r"(?!\d)")
_ANSWER_MARKER = re.compile(r"the answer is", re.IGNORECASE)
_THOUSANDS_SEPARATORS = str.maketrans("", "", ",\u00a0\u202f\u2009")


def extract_number(completion: str) -> float | None:
    """The final numeric answer of a chain-of-thought completion, or None.

    Takes the first number after the last "The answer is" when the completion has one
    (the format our exemplars teach), else the last number in the completion. Thousands
    separators, currency signs, units and trailing periods are not part of the number.
    """
    if not completion:
        return None
    markers = list(_ANSWER_MARKER.finditer(completion))
    if markers:
        numbers = _NUMBER.findall(completion[markers[-1].end():])
        if numbers:
            return _to_float(numbers[0])
    numbers = _NUMBER.findall(completion)
    return _to_float(numbers[-1]) if numbers else None


def _to_float(text: str) -> float | None:
    try:
        return float(text.translate(_THOUSANDS_SEPARATORS))
    except ValueError:
        return None


def parse_gold_number(text: str) -> float:
    value = _to_float(text.strip())
    if value is None:
        raise ValueError(f"gold answer is not a number: {text!r}")
    return value


def numbers_match(predicted: float | None, gold: float) -> bool:
    return predicted is not None and abs(predicted - gold) <= 1e-6 * max(1.0, abs(gold))
