"""Metrics: corpus chrF (sacrebleu), the unbiased pass@k estimator, accuracy."""
from __future__ import annotations

import numpy as np
from sacrebleu.metrics import CHRF


def corpus_chrf(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """Corpus-level chrF with beta=1 (the paper's "chrF1") and sacrebleu's default beta=2."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    return {
        "chrf1": CHRF(beta=1).corpus_score(hypotheses, [references]).score,
        "chrf2": CHRF().corpus_score(hypotheses, [references]).score,
    }


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c pass (Chen et al. 2021): 1 - C(n-c,k)/C(n,k)."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    # Numerically stable product form of 1 - C(n-c, k) / C(n, k).
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(samples_passed: list[list[bool]], ks=(1,)) -> dict[str, float]:
    """Average pass@k over problems; k larger than a problem's sample count is skipped."""
    results = {}
    for k in ks:
        values = [pass_at_k(len(p), sum(p), k) for p in samples_passed if len(p) >= k]
        if values:
            results[f"pass@{k}"] = float(np.mean(values))
    return results
