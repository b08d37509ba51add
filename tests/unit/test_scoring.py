"""The evaluation stage's metrics go through the real evaluators: sandboxed execution for pass@k, sacrebleu
chrF, GSM answer extraction; per-group scores where rows name a group."""
import pytest

from pipeline.errors import PipelineError
from pipeline.scoring import get_metric

CODE_ROWS = [
    {"prompt": "def add(a, b):\n", "target": "    return a + b\n", "test": "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n", "group": "py"},
    {"prompt": "def neg(a):\n", "target": "    return -a\n", "test": "assert neg(4) == -4\n", "group": "py"},
]


def test_pass_at_k_runs_the_tests_in_the_sandbox():
    score = get_metric("pass_at_k")
    right = [[r["target"]] for r in CODE_ROWS]
    summary, records = score(CODE_ROWS, right, {})
    assert summary["score"] == 100.0 and [r["passed"] for r in records] == [[True], [True]]
    wrong = [["    return a - b\n"], ["    import os; os._exit(0)\n"]]  # a wrong body; an early clean exit
    summary, records = score(CODE_ROWS, wrong, {})
    assert summary["score"] == 0.0 and summary["by_group"] == {"py": 0.0}
    # n samples per row: unbiased pass@k (one of two samples right -> pass@1 = 50%)
    summary, _ = score(CODE_ROWS[:1], [["    return a + b\n", "    return 0\n"]], {"ks": [1, 2]})
    assert summary["pass@1"] == 50.0 and summary["pass@2"] == 100.0
    with pytest.raises(PipelineError, match="test"):
        score([{"prompt": "x", "target": "y"}], [["z"]], {})


def test_chrf_and_gsm_accuracy_use_the_real_scorers():
    rows = [{"prompt": "p", "target": "The cat sat on the mat.", "group": "a"}, {"prompt": "p", "target": "Hello world.", "group": "b"}]
    summary, _ = get_metric("chrf")(rows, [[r["target"]] for r in rows], {})
    assert summary["score"] == 100.0 and summary["by_group"] == {"a": 100.0, "b": 100.0}
    summary, _ = get_metric("chrf")(rows, [["zzz"], ["Hello world."]], {})
    assert summary["by_group"]["b"] == 100.0 and summary["by_group"]["a"] < 10 and 0 < summary["score"] < 100
    math = [{"prompt": "q", "target": "1234"}, {"prompt": "q", "target": "7"}]
    summary, records = get_metric("gsm_accuracy")(math, [["so 1,234 in all. The answer is 1234."], ["The answer is 8."]], {})
    assert summary["score"] == 50.0 and [r["correct"] for r in records] == [True, False]


def test_exact_match_cut_and_unknown_metric():
    rows = [{"prompt": "ab+cd=", "target": "12+34"}]
    summary, _ = get_metric("exact_match")(rows, [["12+34=64"]], {"cut_at": "="})
    assert summary["score"] == 100.0
    assert get_metric("exact_match")(rows, [["12+34=64"]], {})[0]["score"] == 0.0
    with pytest.raises(PipelineError, match="unknown metric 'bleu'"):
        get_metric("bleu")


def test_gsm_calculator_grades_the_calculation_not_the_sum():
    """`calculator: true` reads "a op b =" as GSM8K's calculator would and ignores what the model wrote after
    "="; the right operands with the wrong operation fail; a completion that opens otherwise is graded on its
    final number as without the calculator."""
    rows = [{"prompt": "q", "target": "96 + 1 = 97", "reference": 97}] * 5
    outs = [["96 + 1 = 11"], ["96 - 1 = 97"], ["97"], ["ninety = 96"], ["(3 + 2) x 20 - 3 = 0"]]
    plain, _ = get_metric("gsm_accuracy")(rows, outs, {})
    summary, records = get_metric("gsm_accuracy")(rows, outs, {"calculator": True})
    assert [r["correct"] for r in records] == [True, False, True, False, True]
    assert [r["calculated"] for r in records] == [97.0, 95.0, None, None, 97.0]
    # without it the final number decides: "96 - 1 = 97" passes, "96 + 1 = 11" fails
    assert plain["score"] == 40.0 and summary["score"] == 60.0


def test_pass_at_k_renames_completions_back_when_the_row_says_how():
    """A row with `rename_back` (here a dialect that swaps min and max) has each completion's names renamed
    before it runs after `program_prefix`: the dialect's `max` passes as Python's min, Python's own `min` fails;
    strings are not renamed; the record lists what ran."""
    score = get_metric("pass_at_k")
    row = {"prompt": "def lowest(xs):\n", "program_prefix": "def lowest(xs):\n", "target": "    return max(xs)\n",
           "test": "assert lowest([3, 1, 2]) == 1\nassert lowest([5, 9]) == 5\n",
           "rename_back": {"max": "min", "min": "max"}}
    summary, records = score([row, row], [["    return max(xs) if 'max' else 0\n"], ["    return min(xs)\n"]], {})
    assert [r["passed"] for r in records] == [[True], [False]] and summary["score"] == 50.0
    assert records[0]["restored"] == ["    return min(xs) if 'max' else 0\n"]
    assert "restored" not in score(CODE_ROWS, [[r["target"]] for r in CODE_ROWS], {})[1][0]
    with pytest.raises(PipelineError, match="rename_back"):
        score([dict(row, rename_back=["max"])], [["x"]], {})


def test_bits_per_byte_context_token_list_takes_the_first_the_tokenizer_has():
    """A set read by models of different tokenizers names each one's document start: the first token of the list
    that the model's tokenizer has (here a word-level toy vocabulary); none of them is one line."""
    import math

    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from pipeline.scoring import text_bits

    vocab = {"<unk>": 0, "<bos>": 1, "a": 2, "b": 3}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<bos>")

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.seen = None

        def forward(self, input_ids):
            self.seen = input_ids[0].tolist()
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, len(vocab))})()

    model = Recorder()
    bits, n = text_bits(model, tokenizer, "a b a", ["<|endoftext|>", "<bos>"])
    assert model.seen == [1, 2, 3, 2] and n == 3 and bits == pytest.approx(3 * math.log2(len(vocab)))
    with pytest.raises(PipelineError) as error:
        text_bits(model, tokenizer, "a b", ["<|endoftext|>", "<eos>"])
    assert "none of the context_tokens" in str(error.value) and "\n" not in str(error.value)
