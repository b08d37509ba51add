"""A lexical start for a cross-tokenizer composition (CALMConfig.lexical_start): each mA's deepest connection starts
out carrying mA's next-token prediction into the anchor's vocabulary, instead of starting at zero.

mA's logits are E_A h (h: mA's final state, after its final norm; E_A: its output embeddings). Where both
vocabularies hold a token string s (the same bytes), a map M with E_B[s] M ~ E_A[s] turns h into anchor logits,
E_B (M h), for every anchor token at once. M is the least-squares fit over those strings (no training text).

The connection delivers it: f_proj = M, W_V = I, W_Q = 0 (every query scores every key alike, so each head's
attention is its ALiBi bias alone, of one steep `slope`: mA's latest readable state), and W_O = c diag(1/g), with g
the anchor's final RMSNorm gain. Added after mB's last layer to its residual r, the update u moves mB's logits by
about E_B (g * u) / rms(r); with c = strength * rms(r) * rms(M h) (medians over a few texts; rms(M h) because the
connection RMS-normalises f_proj's output) that is `strength` times E_B M h.
The other connections start as usual (W_O = 0). Measured on DEV rows before it was built
(experiments/table2_xtok/vocab_lens.py): mB's logits plus a quarter of this map's take 4.8% off mB's bits per token
on the language pair (Gemma -> SmolLM2) and 6.7% on the code pair (Qwen2.5-Coder -> SmolLM2).
"""
from __future__ import annotations

import torch

from .base_models import decoder_layers, final_norm, text_config
from .configuration_calm import CompositionConfigError

NEEDS_TWO_TOKENIZERS = ("lexical_start is for cross-tokenizer compositions (models with different tokenizers, given a "
                        "CALMProcessor)")


def lexical_connection(connections, num_augmenting_layers: int, num_anchor_layers: int, final_norm_on: bool,
                       which: str) -> int:
    """The index, in `connections`, of the connection a lexical start sets: mA's last layer into mB's last layer,
    read after mA's final norm (the state mA's own LM head reads)."""
    wanted = (num_augmenting_layers - 1, num_anchor_layers - 1)
    if not final_norm_on or wanted not in [tuple(pair) for pair in connections]:
        raise CompositionConfigError(
            f"{which}: lexical_start needs final_norm: true and a connection from mA's last layer into mB's last "
            f"layer, {list(wanted)}; the connections are {[list(p) for p in connections]}"
        )
    return [tuple(pair) for pair in connections].index(wanted)


def shared_strings(anchor_bytes, augmenting_bytes) -> tuple[list[int], list[int]]:
    """(anchor ids, mA ids) of the non-blank token byte strings both vocabularies hold, each string once (its
    lowest ids)."""
    augmenting_ids: dict[bytes, int] = {}
    for index, text in enumerate(augmenting_bytes.table):
        augmenting_ids.setdefault(text, index)
    pairs: dict[bytes, tuple[int, int]] = {}
    for index, text in enumerate(anchor_bytes.table):
        if text.strip() and text in augmenting_ids:
            pairs.setdefault(text, (index, augmenting_ids[text]))
    return [a for a, _ in pairs.values()], [g for _, g in pairs.values()]


def lexical_map(anchor_embeddings: torch.Tensor, augmenting_embeddings: torch.Tensor, anchor_ids, augmenting_ids):
    """M [D_B, D_A], the least-squares solution of E_B[anchor_ids] M = E_A[augmenting_ids] (in float64)."""
    if len(anchor_ids) < anchor_embeddings.shape[1]:
        raise CompositionConfigError(
            f"lexical_start: the vocabularies share {len(anchor_ids)} token strings, fewer than the anchor's width "
            f"{anchor_embeddings.shape[1]}: too few to fit the map"
        )
    source = anchor_embeddings.detach().double()[anchor_ids]
    target = augmenting_embeddings.detach().double()[augmenting_ids]
    return torch.linalg.lstsq(source, target).solution


def _norm_gain(norm, width: int, dtype, device) -> torch.Tensor:
    """g of an RMSNorm-like final norm (norm(x) = g * x / rms(x)), checked on a random vector."""
    with torch.no_grad():
        gain = norm(torch.ones(1, width, dtype=dtype, device=device))[0].float()
        probe = torch.randn(1, width, generator=torch.Generator().manual_seed(0)).to(device, dtype)
        expected = gain * probe.float() / probe.float().pow(2).mean().sqrt()
        if not torch.allclose(norm(probe)[0].float(), expected[0], rtol=1e-2, atol=1e-3 * gain.abs().max()):
            raise CompositionConfigError(f"lexical_start needs an anchor whose final norm is an RMSNorm; "
                                         f"{type(norm).__name__} is not one")
    floor = 0.05 * gain.abs().mean()  # a gain near zero would ask W_O for a huge entry that the norm then discards
    return torch.where(gain.abs() < floor, floor * torch.where(gain < 0, -1.0, 1.0), gain)


def _anchor_residual_rms(model, texts) -> float:
    """The median, over the texts' anchor tokens, of the rms of mB's last layer's output (its residual stream)."""
    captured = []
    handle = decoder_layers(model.anchor)[-1].register_forward_hook(
        lambda module, args, output: captured.append((output[0] if isinstance(output, tuple) else output).detach()))
    try:
        with torch.no_grad():
            for text in texts:
                ids = model.processor.anchor_tokenizer(text, return_tensors="pt")["input_ids"].to(model.device)
                model.anchor(input_ids=ids)
    finally:
        handle.remove()
    return torch.cat([c.float().pow(2).mean(-1).sqrt().flatten() for c in captured]).median().item()


def _projected_rms(model, index: int, mapping: torch.Tensor, texts) -> float:
    """The median, over the texts' mA tokens, of rms(M h), h mA's final state after its final norm."""
    tokenizer = model.processor.augmenting_tokenizers[index]
    values = []
    with torch.no_grad():
        for text in texts:
            ids = tokenizer(text, return_tensors="pt")["input_ids"].to(model.device)
            states = model.augmenting[index](input_ids=ids).last_hidden_state[0].double()
            values.append((states @ mapping.T).pow(2).mean(-1).sqrt())
    return torch.cat(values).median().item()


def start_lexically(model, augmenting: list, texts: list[str]) -> None:
    """Set each mA's lexical connection of a fresh composition (see the module docstring). augmenting: the whole
    mA models (their LM heads: the composition keeps only their backbones); texts: a few training texts, to measure
    the residual scales."""
    settings = model.config.lexical_start
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise CompositionConfigError("lexical_start needs lexical_texts: a few non-empty training texts, to measure "
                                     "the two models' residual scales")
    anchor_width = text_config(model.anchor).hidden_size
    anchor_out = model.anchor.get_output_embeddings().weight
    gain = _norm_gain(final_norm(model.anchor), anchor_width, anchor_out.dtype, anchor_out.device)
    residual = _anchor_residual_rms(model, texts)
    for index, bridge_index in enumerate(model._lexical_connections):
        augmenting_out = augmenting[index].get_output_embeddings().weight
        anchor_ids, augmenting_ids = shared_strings(model.processor.anchor_bytes, model.processor.augmenting[index].bytes)
        mapping = lexical_map(anchor_out, augmenting_out, anchor_ids, augmenting_ids)
        bridge = model.bridges[index][bridge_index]
        scale = settings["strength"] * residual * (_projected_rms(model, index, mapping, texts)
                                                   if bridge.normalize_inputs else 1.0)
        with torch.no_grad():
            bridge.f_proj.weight.copy_(mapping.to(bridge.f_proj.weight.dtype))
            bridge.v_proj.weight.copy_(torch.eye(anchor_width, dtype=bridge.v_proj.weight.dtype))
            bridge.q_proj.weight.zero_()
            bridge.o_proj.weight.copy_(torch.diag(scale / gain).to(bridge.o_proj.weight.dtype))

