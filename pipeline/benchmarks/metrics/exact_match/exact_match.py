"""Exact match of each prediction with its reference, whitespace stripped."""
import datasets
import evaluate

_DESCRIPTION = """Whether each prediction equals its reference, both stripped of surrounding whitespace. With
`cut_at`, a prediction is graded only up to the first occurrence of that string: e.g. KV-SUBS shares its prompt with
a scratchpad KV-MATH, whose answer goes on after the substituted expression with "=" and the value."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of str.
    references: list of str.
    cut_at: str or None (default): grade each prediction up to the first occurrence of this string.
Returns:
    exact_match: the fraction of predictions that match, 0-1.
    correct: list of bool, one verdict per prediction.
    graded: list of str, each prediction as compared (stripped, cut).
Examples:
    >>> exact_match = evaluate.load("pipeline/benchmarks/metrics/exact_match")
    >>> exact_match.compute(predictions=["12+34=46", "7"], references=["12+34", "8"], cut_at="=")["exact_match"]
    0.5
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, cut_at=None):
        graded = [p.strip().split(cut_at, 1)[0] if cut_at else p.strip() for p in predictions]
        correct = [g == r.strip() for g, r in zip(graded, references)]
        return {"exact_match": sum(correct) / len(correct) if correct else 0.0, "correct": correct, "graded": graded}
