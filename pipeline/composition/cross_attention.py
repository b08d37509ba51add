"""The learned part of a composition: one connection's cross-attention (`CrossAttention`: f_proj D_A -> D_B, then
multi-head attention, queries from mB, keys/values from mA), what decoding carries from step to step
(`CALMCache`), and the positions of a left-padded batch."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_calm import CALMConfig, CompositionConfigError


class CrossAttention(nn.Module):
    """One CALM connection (paper §3.1): f_proj maps mA's states to mB's width, then multi-head cross-attention.

    Parameters: f_proj D_A*D_B, W_Q/W_K/W_V 3*D_B^2 (the paper's Appendix C count) plus the output projection W_O,
    D_B^2, which the paper's formula leaves out. No biases. W_O starts at zero, so an untrained composition is
    exactly its anchor.

    `slope` gives every head one ALiBi slope (CALMForCausalLM sets it on a lexical start's connection).
    Its options come from the composition's CALMConfig (num_heads, normalize_inputs, rotary, rotary_theta,
    recency_bias, attention_dropout, augmenting_dropout); `config.num_heads` must be set (CALMForCausalLM sets None to the
    anchor's head count). They are copied to attributes of the same names, which forward() reads.
    """

    def __init__(self, config: CALMConfig, augmenting_width: int, anchor_width: int, slope: float | None = None):
        super().__init__()
        num_heads = config.num_heads
        if num_heads is None:
            raise CompositionConfigError("CrossAttention needs config.num_heads (None means the anchor's head count: "
                                         "CALMForCausalLM fills it in)")
        if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads <= 0 or anchor_width % num_heads:
            raise CompositionConfigError(
                f"num_heads must be a positive integer dividing the anchor width {anchor_width}, not {num_heads!r}"
            )
        self.num_heads = num_heads
        self.head_dim = anchor_width // num_heads
        if config.rotary and self.head_dim % 2:
            raise CompositionConfigError(f"rotary positions need an even head size, not {self.head_dim}")
        self.normalize_inputs = config.normalize_inputs
        self.rotary = config.rotary
        self.rotary_theta = config.rotary_theta
        # slope: one ALiBi slope for every head (a lexical start's connection, lexical_start.py), recency bias or not
        self.recency_bias = config.recency_bias or slope is not None
        self.slope = slope
        self.attention_dropout = config.attention_dropout
        self.augmenting_dropout = config.augmenting_dropout
        self.f_proj = nn.Linear(augmenting_width, anchor_width, bias=False)
        self.q_proj = nn.Linear(anchor_width, anchor_width, bias=False)
        self.k_proj = nn.Linear(anchor_width, anchor_width, bias=False)
        self.v_proj = nn.Linear(anchor_width, anchor_width, bias=False)
        self.o_proj = nn.Linear(anchor_width, anchor_width, bias=False)
        self.reset_parameters()

    def reset_parameters(self):
        for linear in (self.f_proj, self.q_proj, self.k_proj, self.v_proj):
            linear.reset_parameters()
        nn.init.zeros_(self.o_proj.weight)

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        # The residual streams of two independently trained models have unrelated, often large, scales.
        return F.rms_norm(x, (x.shape[-1],), eps=1e-6) if self.normalize_inputs else x

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def _rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotary position embedding of queries or keys x [B, H, L, d] at token positions [B, L].

        Both models read the same sequence, so with rotations of the shared positions a query can find mA's state
        at its own position, or k tokens back; without them, attention has no notion of where a state came from.
        """
        if not self.rotary:
            return x
        half = self.head_dim // 2
        inv_freq = self.rotary_theta ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
        angles = positions[:, None, :, None].float() * inv_freq
        cos, sin = angles.cos(), angles.sin()
        first, second = x[..., :half].float(), x[..., half:].float()
        return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1).to(x.dtype)

    def _recency_bias(self, allowed: torch.Tensor) -> torch.Tensor:
        """ALiBi (Press et al., 2022) over what each query may read: head h adds -2^(-8(h+1)/H) x the number of
        readable mA states after a key, so some heads start out reading mA's latest states and others all of them.
        The distance is counted from `allowed` alone (readable keys, in mA's token order), so it means the same in
        every mode, with or without a cache: [B, 1, T, S] bool -> [B, H, T, S] additive mask."""
        rank = allowed.long().cumsum(-1)
        distance = (rank[..., -1:] - rank).float()
        if self.slope is None:
            slopes = 2.0 ** (-8.0 * torch.arange(1, self.num_heads + 1, device=allowed.device) / self.num_heads)
        else:
            slopes = torch.full((self.num_heads,), self.slope, device=allowed.device)
        bias = -slopes[None, :, None, None] * distance
        return bias.masked_fill(~allowed, float("-inf")).to(self.q_proj.weight.dtype)

    def keys_values(self, augmenting_states: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """mA states [B, S, D_A] at positions [B, S] -> keys and values [B, H, S, D_B/H], cached once computed."""
        augmenting_states = F.dropout(augmenting_states, self.augmenting_dropout, self.training)
        projected = self._norm(self.f_proj(augmenting_states.to(self.f_proj.weight.dtype)))
        keys = self._rotate(self._split_heads(self.k_proj(projected)), positions)
        return keys, self._split_heads(self.v_proj(projected))

    def forward(self, anchor_states, positions, keys, values, allowed, has_key) -> torch.Tensor:
        """The residual update for mB at positions [B, T]: [B, T, D_B].

        allowed [B, 1, T, S] says which mA positions each mB position may read; has_key [B, 1, T, 1] is False for
        rows that may read none (left padding, or an empty prompt), whose update is zero rather than NaN.
        """
        batch, length, width = anchor_states.shape
        queries = self._split_heads(self.q_proj(self._norm(anchor_states.to(self.q_proj.weight.dtype))))
        queries = self._rotate(queries, positions)
        dropout = self.attention_dropout if self.training else 0.0
        mask = self._recency_bias(allowed) if self.recency_bias else allowed
        attended = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask, dropout_p=dropout)
        attended = attended * has_key
        update = self.o_proj(attended.transpose(1, 2).reshape(batch, length, width))
        return update.to(anchor_states.dtype)


class CALMCache:
    """Decoding state of a composition; one decode step appends one token's worth to each part.

    Not a transformers `Cache`: it holds whole caches of other models. `generate()` needs `get_seq_length`, and
    beam search `reorder_cache`.
    """

    is_compileable = False
    is_croppable = False

    def __init__(self, num_augmenting: int):
        self.anchor = None  # the anchor's own Cache
        self.augmenting = [None] * num_augmenting  # each mA's own Cache (iterative mode)
        self.keys_values = [None] * num_augmenting  # per mA: [(keys, values) per connection], [B, H, S, d]
        self.augmenting_mask = [None] * num_augmenting  # encoder mode: [B, S] bool, real prompt tokens of mA;
        # cross-tokenizer: [B, S] long, real tokens among the mA slots fed so far (a step pads rows to its widest)
        self.alignment = None  # cross-tokenizer: the processor's decoding state (per mA, per row)
        self.length = 0  # tokens of the shared sequence already processed

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Beam search: row i of every part becomes row beam_idx[i]. A row chosen twice is copied (its alignment
        too), so that the two beams then decode apart."""
        if self.anchor is not None:
            self.anchor.reorder_cache(beam_idx)
        for a, augmenting in enumerate(self.augmenting):
            if augmenting is not None:
                augmenting.reorder_cache(beam_idx)
            if self.keys_values[a] is not None:
                self.keys_values[a] = [(keys.index_select(0, beam_idx.to(keys.device)),
                                        values.index_select(0, beam_idx.to(values.device)))
                                       for keys, values in self.keys_values[a]]
            if self.augmenting_mask[a] is not None:
                mask = self.augmenting_mask[a]
                self.augmenting_mask[a] = mask.index_select(0, beam_idx.to(mask.device))
        if self.alignment is not None:  # a row's first beam takes the row itself, each further one a copy
            order, taken = beam_idx.tolist(), set()
            alignment = [[] for _ in self.alignment]
            for i in order:
                for rows, reordered in zip(self.alignment, alignment):
                    reordered.append(rows[i].copy() if i in taken else rows[i])
                taken.add(i)
            self.alignment = alignment


@dataclass
class _AnchorStep:
    """What the anchor's hooks need during one forward: per mA, the keys/values per connection and the masks."""

    positions: torch.Tensor | list  # [B, T] positions of the anchor's new tokens (cross-tokenizer: one per mA)
    keys_values: list
    allowed: list
    has_key: list


def _positions_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    # Left padding must not shift positions: a row's first real token is at position 0, as when run alone.
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
