"""Tiny random causal LMs of every supported family, with different widths, depths and head counts."""

import torch
from transformers import (
    GemmaConfig,
    GemmaForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    XGLMConfig,
    XGLMForCausalLM,
)

VOCAB = 96
FAMILIES = ("llama", "qwen2", "gemma", "gpt2", "gpt_neox", "xglm")


def tiny_model(family: str, width: int = 64, layers: int = 4, heads: int = 4, seed: int = 0, vocab: int = VOCAB):
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if family == "llama":
        config = LlamaConfig(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                             num_attention_heads=heads, num_key_value_heads=max(1, heads // 2), **common)
        model = LlamaForCausalLM(config)
    elif family == "qwen2":
        config = Qwen2Config(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                             num_attention_heads=heads, num_key_value_heads=max(1, heads // 2), **common)
        model = Qwen2ForCausalLM(config)
    elif family == "gemma":
        config = GemmaConfig(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                             num_attention_heads=heads, num_key_value_heads=1, head_dim=width // heads, **common)
        model = GemmaForCausalLM(config)
    elif family == "gpt2":
        config = GPT2Config(n_embd=width, n_layer=layers, n_head=heads, n_positions=256, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, **common)
        model = GPT2LMHeadModel(config)
    elif family == "gpt_neox":
        config = GPTNeoXConfig(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                               num_attention_heads=heads, max_position_embeddings=256, **common)
        model = GPTNeoXForCausalLM(config)
    elif family == "xglm":  # sinusoidal absolute positions (the pipeline's default anchor for Table 1)
        config = XGLMConfig(d_model=width, ffn_dim=2 * width, num_layers=layers, attention_heads=heads,
                            max_position_embeddings=256, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                            layerdrop=0.0, **common)
        model = XGLMForCausalLM(config)
    else:
        raise ValueError(family)
    return model.eval()


def randomize_composition(calm, seed: int = 1, std: float = 0.2):
    """Give the composition parameters (W_O included) random values, so that mA really changes mB's output."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in calm.bridges.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
    return calm


def assert_text_after_each_cut_leaves_earlier_logits(calm, ids: list[int], other: list[int], cuts: list[int]) -> None:
    """The causal property of a cross-tokenizer composition: row 0 is `ids`; each further row keeps ids[:t+1] and
    continues with another text. Logits up to each cut t must be bitwise those of row 0, later ones must differ,
    and the trained (randomized) composition must differ from its anchor alone."""
    rows = [ids] + [ids[: t + 1] + other[: len(ids) - t - 1] for t in cuts]
    batch = torch.tensor(rows)
    with torch.no_grad():
        logits = calm(input_ids=batch).logits
        anchor_logits = calm.anchor(input_ids=batch).logits
    for row, t in enumerate(cuts, start=1):
        assert torch.equal(logits[0, : t + 1], logits[row, : t + 1]), f"text after token {t} changed its logits"
        assert not torch.equal(logits[0, t + 1 :], logits[row, t + 1 :])
    assert (logits - anchor_logits).abs().amax() > 1e-3  # mA's contribution is real


def save_tiny_checkpoint(path) -> None:
    """A 1-layer Llama with a byte-level BPE tokenizer (300 ids) trained on a few lines, saved as a Hugging Face
    checkpoint: what `python -m pipeline.benchmarks model.path=...` loads in the tests."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(["def f(x):\n    return x\n", "The answer is 5."] * 10,
                                trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"],
                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


def save_tiny_llama_for(tokenizer, folder, width: int, layers: int = 2, seed: int = 0):
    """A tiny random Llama over a real tokenizer's whole vocabulary, saved with that tokenizer: the stand-in for a
    hub model in the cross-tokenizer worlds' chains (each base keeps its own tokenizer)."""
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=width, intermediate_size=2 * width,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=4096, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def beams_that_split(monkeypatch) -> list[list[int]]:
    """Records every beam_idx that decoding hands CALMCache.reorder_cache, so that a beam search test can show its
    beams really were reordered (some row chosen twice, another dropped) rather than kept in place."""
    from pipeline.composition.cross_attention import CALMCache

    seen, reorder = [], CALMCache.reorder_cache

    def spy(self, beam_idx):
        seen.append(beam_idx.tolist())
        return reorder(self, beam_idx)

    monkeypatch.setattr(CALMCache, "reorder_cache", spy)
    return seen
