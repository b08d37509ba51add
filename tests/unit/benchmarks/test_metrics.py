"""Answer extraction, and the project's metrics as `evaluate` modules (pipeline/benchmarks/metrics): loaded from the
repository without the network, the figures of a direct computation (sacrebleu, the combinatorial pass@k), the same
through add_batch as through one compute, one-line errors for bad input."""
import itertools
import math
import socket

import pytest
from sacrebleu.metrics import CHRF

from pipeline.benchmarks.extraction import extract_number, numbers_match, truncate_at_stop
from pipeline.benchmarks.metrics import METRICS_DIR, load_metric


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


@pytest.fixture(scope="module")
def metrics():
    """Every module, loaded with the network refused: a load that tried the hub would fail here."""
    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    original = socket.socket.connect
    socket.socket.connect = refuse
    try:
        return {name: load_metric(name) for name in ("chrf", "exact_match", "gsm_accuracy", "pass_at_k")}
    finally:
        socket.socket.connect = original


def brute_force_pass_at_k(n, c, k):
    """Probability that a random k-subset of n samples (c correct) holds a correct one."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(outcomes[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_pass_at_k_equals_the_combinatorial_definition(metrics, n):
    for c in range(n + 1):
        figures = metrics["pass_at_k"].compute(passed=[[True] * c + [False] * (n - c)], k=list(range(1, n + 1)))
        assert figures == {f"pass@{k}": pytest.approx(brute_force_pass_at_k(n, c, k)) for k in range(1, n + 1)}


def test_pass_at_k_averages_over_problems_with_enough_samples(metrics):
    pass_at_k = metrics["pass_at_k"]
    assert pass_at_k.compute(passed=[[True] * 3 + [False] * 7], k=1)["pass@1"] == pytest.approx(0.3)
    assert pass_at_k.compute(passed=[[True] * 13 + [False] * 187], k=[100])["pass@100"] == \
        pytest.approx(1 - math.comb(187, 100) / math.comb(200, 100))
    assert pass_at_k.compute(passed=[[True, False], [False, False]], k=[1, 2]) == \
        {"pass@1": pytest.approx(0.25), "pass@2": pytest.approx(0.5)}
    # a problem with fewer than k samples is left out of pass@k; no problem with k samples: no figure
    assert pass_at_k.compute(passed=[[True], [False, False]], k=[1, 2]) == \
        {"pass@1": pytest.approx(0.5), "pass@2": 0.0}
    assert pass_at_k.compute(passed=[[True, False]], k=[3]) == {}
    with pytest.raises(ValueError, match="k must be positive integers"):
        pass_at_k.compute(passed=[[True]], k=[0])


def test_chrf_is_sacrebleus_corpus_chrf_at_beta_1_and_2(metrics):
    hypotheses = ["the cat sat on the mat", "a dog barked loudly", "Ümlaut çedilla"]
    references = ["the cat sat on a mat", "the dog was barking", "Umlaut cedilla"]
    scores = metrics["chrf"].compute(predictions=hypotheses, references=references)
    # the same floats as sacrebleu's own call, not merely close
    assert scores == {"chrf1": CHRF(beta=1).corpus_score(hypotheses, [references]).score,
                      "chrf2": CHRF().corpus_score(hypotheses, [references]).score}
    assert scores["chrf1"] != pytest.approx(scores["chrf2"])  # the betas differ here
    assert metrics["chrf"].compute(predictions=references, references=references) == \
        {"chrf1": pytest.approx(100.0), "chrf2": pytest.approx(100.0)}


def test_exact_match_strips_and_cuts(metrics):
    result = metrics["exact_match"].compute(predictions=[" 12+34=46\n", "12+34", "7"],
                                            references=["12+34", "12+34 ", "8"], cut_at="=")
    assert result == {"exact_match": pytest.approx(2 / 3), "correct": [True, True, False],
                      "graded": ["12+34", "12+34", "7"]}
    assert metrics["exact_match"].compute(predictions=["12+34=46"], references=["12+34"])["correct"] == [False]


def test_gsm_accuracy_reads_each_completion_in_its_language(metrics):
    gsm = metrics["gsm_accuracy"]
    completions = ["so 1,234 in all. The answer is 1234.", "Die Antwort lautet 1.234.", "The answer is 8."]
    result = gsm.compute(predictions=completions, references=["1234", "1,234", "7"], language=[None, "de", "en"])
    assert result == {"accuracy": pytest.approx(2 / 3), "correct": [True, True, False],
                      "extracted": [1234.0, 1234.0, 8.0]}
    # gold answers already parsed (the benchmarks' items) grade the same as the datasets' text
    assert gsm.compute(predictions=completions, references=[1234.0, 1234.0, 7.0], language=[None, "de", "en"]) == result
    # one code for every completion: German reads "1.234" as 1234, English as 1.234
    assert gsm.compute(predictions=[completions[1]], references=["1234"], language="de")["correct"] == [True]
    assert gsm.compute(predictions=[completions[1]], references=["1234"])["correct"] == [False]
    calculated = gsm.compute(predictions=["96 + 1 = 11", "97"], references=["97", "97"], calculator=True)
    assert calculated["correct"] == [True, True] and calculated["calculated"] == [97.0, None]


def test_add_batch_then_compute_equals_one_compute(metrics):
    inputs = {
        "chrf": dict(predictions=["the cat sat", "a dog", "hello there", "x"],
                     references=["the cat sat down", "the dog", "hello", "y"]),
        "exact_match": dict(predictions=["a", "b=2", "c", "d"], references=["a", "b", "x", "d"]),
        "gsm_accuracy": dict(predictions=["The answer is 3.", "4", "so 5", "6 apples"],
                             references=["3", "5", "5", "6"]),
        "pass_at_k": dict(passed=[[True, False], [False], [True, True], [False, False, True]]),
    }
    options = {"exact_match": {"cut_at": "="}, "pass_at_k": {"k": [1, 2]}}
    for name, columns in inputs.items():
        metric = metrics[name]
        whole = metric.compute(**columns, **options.get(name, {}))
        for start in (0, 1, 3):  # batches [0:1] [1:3] [3:4]
            end = {0: 1, 1: 3, 3: 4}[start]
            metric.add_batch(**{column: values[start:end] for column, values in columns.items()})
        assert metric.compute(**options.get(name, {})) == whole, name


def test_the_modules_load_by_path_as_users_load_them(metrics):
    import evaluate

    for name, metric in metrics.items():
        by_path = evaluate.load(str(METRICS_DIR / name), keep_in_memory=True)
        assert by_path.name == metric.name == name and by_path.features == metric.features
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        load_metric("bleu")


def test_bad_input_is_one_line(metrics):
    for call in (lambda: metrics["chrf"].compute(predictions=["a", "b"], references=["a"]),
                 lambda: metrics["exact_match"].compute(predictions=["a"], references=["a", "b"]),
                 lambda: metrics["gsm_accuracy"].compute(predictions=["1", "2"], references=["1", "2"],
                                                         language=["de"])):
        with pytest.raises(ValueError) as error:
            call()
        assert "\n" not in str(error.value) and ("Mismatch" in str(error.value) or "languages for" in str(error.value))
