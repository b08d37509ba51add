"""The unbiased pass@k estimator over each problem's execution verdicts."""
import datasets
import evaluate
import numpy as np

_DESCRIPTION = """pass@k (Chen et al. 2021) from the verdicts of running each problem's n sampled programs against its
tests (the project's sandbox, pipeline/sandbox/, runs them; this module only counts): per problem with c
passing samples the unbiased estimate 1 - C(n-c, k) / C(n, k), averaged over the problems that have at least k
samples. Unlike `code_eval` on the hub, nothing is executed here."""

_CITATION = """@article{chen2021codex,
  title = {Evaluating Large Language Models Trained on Code}, author = {Chen, Mark and others},
  journal = {arXiv preprint arXiv:2107.03374}, year = {2021}}"""

_KWARGS_DESCRIPTION = """
Args:
    passed: list (one per problem) of lists of bool, whether each sample passed the problem's tests.
    k: int or list of int (default [1]).
Returns:
    pass@<k> for each k: the mean over problems with at least k samples, 0-1 (absent when no problem has k samples).
Examples:
    >>> pass_at_k = evaluate.load("pipeline/benchmarks/metrics/pass_at_k")
    >>> pass_at_k.compute(passed=[[True, False], [False, False]], k=[1, 2])
    {'pass@1': 0.25, 'pass@2': 0.5}
"""


def unbiased_pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k) for n samples of which c pass, 1 <= k <= n."""
    if n - c < k:
        return 1.0
    # the product form: no huge binomials
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PassAtK(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"passed": datasets.Sequence(datasets.Value("bool"))}),
            codebase_urls=["https://github.com/openai/human-eval"],
        )

    def _compute(self, passed, k=(1,)):
        ks = [k] if isinstance(k, int) else list(k)
        if any(not isinstance(x, int) or x < 1 for x in ks):
            raise ValueError(f"pass_at_k: k must be positive integers, got {k!r}")
        results = {}
        for x in ks:
            values = [unbiased_pass_at_k(len(p), sum(p), x) for p in passed if len(p) >= x]
            if values:
                results[f"pass@{x}"] = float(np.mean(values))
        return results
