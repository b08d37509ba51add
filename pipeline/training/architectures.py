"""Causal LMs from scratch over a world's tokenizer: Llama (RoPE), GPT-2 (learned positions), XGLM (sinusoidal)."""
from __future__ import annotations

from pipeline.errors import PipelineError


def build_base_model(arch: dict, tokenizer, max_positions: int):
    """A causal LM from scratch:
    - `type: llama`: RoPE, no position in the residual stream;
    - `type: gpt2`: learned absolute position embeddings in the residual stream (which helps the composition
      line mA and mB up), but it adds only at the offsets it was trained at;
    - `type: xglm`: sinusoidal absolute position embeddings in the residual stream (fixed, so a shift in position
      is one linear map for every offset)."""
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, XGLMConfig, XGLMForCausalLM

    kind = arch.get("type", "llama")
    if kind not in ("llama", "gpt2", "xglm"):
        raise PipelineError(f"unknown model type {kind!r}: use llama, gpt2 or xglm")
    h, heads = arch["hidden"], arch["heads"]
    if h % heads:
        raise PipelineError(f"hidden={h} is not divisible by heads={heads}")
    layers, intermediate = arch["layers"], arch.get("intermediate", 4 * h)
    common = dict(
        vocab_size=len(tokenizer),
        tie_word_embeddings=arch.get("tie_embeddings", True),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    if kind == "xglm":
        return XGLMForCausalLM(XGLMConfig(
            max_position_embeddings=max_positions, d_model=h, num_layers=layers, attention_heads=heads,
            ffn_dim=intermediate, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0,
            decoder_start_token_id=tokenizer.bos_token_id, **common,
        ))
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(
            n_positions=max_positions, n_embd=h, n_layer=layers, n_head=heads, n_inner=intermediate,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common,
        ))
    return LlamaForCausalLM(LlamaConfig(
        hidden_size=h, intermediate_size=intermediate, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=heads, max_position_embeddings=max_positions,
        rope_theta=arch.get("rope_theta", 10000.0), attention_dropout=0.0, **common,
    ))
