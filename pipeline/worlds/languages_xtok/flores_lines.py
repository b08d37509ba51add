"""Which FLORES-200 devtest lines serve what in the cross-tokenizer language world.

Only devtest is available here (1,012 lines, line-aligned across languages), so one split is cut in three, by line
number, the same lines for every language:

  EXEMPLAR_LINES  1000-1011  the few-shot pool; SHOT_LINES (two of them) are the exemplars every prompt shows
  DEV_LINES        900-999   choices only: the premise (experiments/table2_xtok/premise.py), calibration
  TEST_LINES         0-899   what the world evaluates; never scored for a choice

Within DEV and TEST only sentences whose ENGLISH side (the reference) is at most MAX_REFERENCE_CHARS characters
are used, in line order, so that generation on the CPU stays bounded; the length is read on the English line, so a
sentence is in or out for every language alike. Of the dev lines 47 qualify, of the test lines 415.
"""
from __future__ import annotations

from pipeline.errors import PipelineError

LANGUAGES = ("lij_Latn", "mar_Deva", "taq_Latn", "nno_Latn", "sun_Latn", "ban_Latn", "pol_Latn", "tha_Thai",
             "min_Latn", "acm_Arab", "swh_Latn", "hau_Latn", "yor_Latn")   # XX->English; the paper's Table 2 LRLs first
TARGET = "eng_Latn"
DEVTEST_LINES = 1012
EXEMPLAR_LINES = range(1000, 1012)
SHOT_LINES = (1008, 1009)   # the two shortest consecutive lines of the pool (90 and 105 English characters)
DEV_LINES = range(900, 1000)
TEST_LINES = range(0, 900)
MAX_REFERENCE_CHARS = 120


def _bounded(lines: range, english: list[str], count: int | None, what: str) -> list[int]:
    if len(english) != DEVTEST_LINES:
        raise PipelineError(f"FLORES-200 {TARGET} devtest has {len(english)} lines, expected {DEVTEST_LINES}")
    chosen = [i for i in lines if len(english[i]) <= MAX_REFERENCE_CHARS]
    if count is None:
        return chosen
    if not 0 < count <= len(chosen):
        raise PipelineError(f"{what}: {count} sentences asked, 1 to {len(chosen)} available (lines "
                            f"{lines.start}-{lines.stop - 1}, English <= {MAX_REFERENCE_CHARS} characters)")
    return chosen[:count]


def dev_lines(english: list[str], count: int | None = None) -> list[int]:
    """The first `count` DEV lines (all, if None) whose English is at most MAX_REFERENCE_CHARS characters."""
    return _bounded(DEV_LINES, english, count, "FLORES dev slice")


def test_lines(english: list[str], count: int | None = None) -> list[int]:
    """The first `count` TEST lines (all, if None) whose English is at most MAX_REFERENCE_CHARS characters."""
    return _bounded(TEST_LINES, english, count, "FLORES test subset")
