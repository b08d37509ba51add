"""Answer extraction, pass@k and chrF."""
import itertools
import math

import pytest
from sacrebleu.metrics import CHRF

from pipeline.benchmarks.extraction import extract_number, numbers_match, truncate_at_stop
from pipeline.benchmarks.metrics import corpus_chrf, mean_pass_at_k, pass_at_k


@pytest.mark.parametrize("completion, expected", [
    ("She makes 9 * 2 = $18 every day. The answer is 18.", 18),
    ("The answer is $1,234,567.", 1234567),
    ("The answer is 1,234.50 dollars", 1234.5),
    ("It costs €2,125 in total", 2125),
    ("So the total is 75%.", 75),
    ("He walks 12 km. Then 3 km more, so 15 km.", 15),
    ("The answer is 18 eggs. Check: 16 - 3 - 4 = 9, 9 * 2 = 18, plus 100", 18),  # marker wins
    ("the answer is -7.", -7),
    ("pages 10-20 were read, so 11 pages", 11),
    ("x = 3 - 5 = -2", -2),
    ("答案是18。", 18),
    ("Die Antwort ist 1\u202f234.", 1234),
    ("The answer is .5", 0.5),
    ("The answer is: 42\n\nQuestion: next", 42),
    ("It is 3.", 3),
    ("১৮", 18),  # Bengali digits
])
def test_extract_number(completion, expected):
    assert extract_number(completion) == pytest.approx(expected)


@pytest.mark.parametrize("completion", ["", "no number here", "The answer is unknown."])
def test_extract_number_none(completion):
    assert extract_number(completion) is None


def test_numbers_match_compares_values_not_text():
    assert numbers_match(18.0, 18) and numbers_match(1234.0, 1234.0)
    assert not numbers_match(None, 0) and not numbers_match(17.999, 18)


def test_truncate_at_earliest_stop():
    assert truncate_at_stop("a\nb\n\nQuestion: c", ["Question:", "\n\n"]) == "a\nb"
    assert truncate_at_stop("abc", []) == "abc" and truncate_at_stop("abc", ["x"]) == "abc"


def brute_force_pass_at_k(n, c, k):
    """Probability that a random k-subset of n samples (c correct) holds a correct one."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(outcomes[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_pass_at_k_equals_the_combinatorial_definition(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(n, c, k))


def test_pass_at_1_is_the_fraction_correct_and_bad_k_is_rejected():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(200, 13, 100) == pytest.approx(1 - math.comb(187, 100) / math.comb(200, 100))
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    assert mean_pass_at_k([[True, False], [False, False]], ks=(1, 2)) == \
        {"pass@1": pytest.approx(0.25), "pass@2": pytest.approx(0.5)}


def test_corpus_chrf_reports_beta_1_and_beta_2():
    hypotheses = ["the cat sat on the mat", "a dog barked loudly"]
    references = ["the cat sat on a mat", "the dog was barking"]
    scores = corpus_chrf(hypotheses, references)
    assert scores["chrf1"] == pytest.approx(
        CHRF(beta=1).corpus_score(hypotheses, [references]).score)
    assert scores["chrf2"] == pytest.approx(CHRF().corpus_score(hypotheses, [references]).score)
    assert scores["chrf1"] != pytest.approx(scores["chrf2"])  # the betas differ here
    assert corpus_chrf(references, references) == {"chrf1": pytest.approx(100.0),
                                                    "chrf2": pytest.approx(100.0)}
    with pytest.raises(ValueError):
        corpus_chrf(["a"], ["a", "b"])
