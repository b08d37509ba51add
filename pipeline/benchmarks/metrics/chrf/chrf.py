"""Corpus chrF through sacrebleu, one reference per prediction."""
import datasets
import evaluate
from sacrebleu.metrics import CHRF

_DESCRIPTION = """Corpus-level chrF (Popović 2015) computed by sacrebleu over all predictions at once, one reference
each: `chrf1` with beta=1 (the "chrF1" of the CALM paper's FLORES and code-to-text tables) and `chrf2` with
sacrebleu's default beta=2. Texts are scored as given (the callers strip them)."""

_CITATION = """@inproceedings{popovic-2015-chrf,
  title = {chrF: character n-gram F-score for automatic MT evaluation},
  author = {Popovi{\\'c}, Maja}, booktitle = {Proceedings of the Tenth Workshop on Statistical Machine Translation},
  year = {2015}, pages = {392--395}}"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of str, the hypotheses.
    references: list of str, one reference per hypothesis.
Returns:
    chrf1: corpus chrF with beta=1, 0-100.
    chrf2: corpus chrF with beta=2 (sacrebleu's default), 0-100.
Examples:
    >>> chrf = evaluate.load("pipeline/benchmarks/metrics/chrf")
    >>> chrf.compute(predictions=["the cat sat on the mat"], references=["the cat sat on the mat"])
    {'chrf1': 100.0, 'chrf2': 100.0}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Chrf(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=["https://github.com/mjpost/sacrebleu"],
            reference_urls=["https://aclanthology.org/W15-3049"],
        )

    def _compute(self, predictions, references):
        return {"chrf1": CHRF(beta=1).corpus_score(predictions, [references]).score,
                "chrf2": CHRF().corpus_score(predictions, [references]).score}
