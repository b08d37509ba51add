"""Checks of the inputs a composition's forward() is given, so that inputs it cannot use fail with one line
(CompositionInputError, CompositionConfigError) instead of a traceback from deep inside a base model."""
from __future__ import annotations

import torch

from .configuration_calm import CompositionConfigError, CompositionInputError


def check_inputs(input_ids, augmenting_input_ids, augmenting_attention_mask, mode: str):
    """A composition whose models share one tokenizer: input_ids, and (mode='encoder' only) the prompt mA reads."""
    if input_ids is None:
        raise CompositionInputError("CALMForCausalLM needs input_ids: the augmenting models read the same tokens")
    if input_ids.dim() != 2 or input_ids.numel() == 0:
        raise CompositionInputError(
            f"input_ids must be a non-empty [batch, tokens] tensor, not one of shape {tuple(input_ids.shape)}"
        )
    if augmenting_input_ids is None:
        return
    if mode != "encoder":
        raise CompositionConfigError("augmenting_input_ids is for mode='encoder'; in iterative mode mA reads input_ids")
    if augmenting_input_ids.dim() != 2 or augmenting_input_ids.numel() == 0:
        raise CompositionInputError(
            "augmenting_input_ids (the prompt mA reads) must be a non-empty [batch, tokens] tensor, not one of "
            f"shape {tuple(augmenting_input_ids.shape)}; a row with no prompt is all padding, with a zero "
            "augmenting_attention_mask"
        )
    if augmenting_input_ids.shape[0] != input_ids.shape[0]:
        raise CompositionInputError(
            f"augmenting_input_ids has {augmenting_input_ids.shape[0]} rows and input_ids "
            f"{input_ids.shape[0]}: give one mA prompt per row of input_ids"
        )
    if augmenting_attention_mask is not None and augmenting_attention_mask.shape != augmenting_input_ids.shape:
        raise CompositionInputError(
            f"augmenting_attention_mask has shape {tuple(augmenting_attention_mask.shape)}; expected that of "
            f"augmenting_input_ids, {tuple(augmenting_input_ids.shape)}"
        )


def check_cross_inputs(input_ids, augmenting_input_ids, augmenting_attention_mask, augmenting_visible,
                       count: int):
    """A cross-tokenizer composition: the anchor's input_ids, and each of the `count` mA's own tokens (all three
    augmenting inputs, or none)."""
    if input_ids is None or input_ids.dim() != 2 or input_ids.numel() == 0:
        shape = None if input_ids is None else tuple(input_ids.shape)
        raise CompositionInputError(f"input_ids (the anchor's tokens) must be a non-empty [batch, tokens] tensor, "
                                    f"not {shape}")
    given = [x is not None for x in (augmenting_input_ids, augmenting_attention_mask, augmenting_visible)]
    if any(given) and not all(given):
        raise CompositionInputError("give augmenting_input_ids, augmenting_attention_mask and augmenting_visible "
                                    "together (as CALMProcessor makes them), or none: then the composition "
                                    "aligns input_ids itself")
    if not any(given):
        return
    for name, value in (("augmenting_input_ids", augmenting_input_ids),
                        ("augmenting_attention_mask", augmenting_attention_mask),
                        ("augmenting_visible", augmenting_visible)):
        values = value if isinstance(value, (list, tuple)) else [value]
        if len(values) != count or not all(isinstance(v, torch.Tensor) and v.dim() == 2 for v in values):
            raise CompositionInputError(f"{name} must be a [batch, length] tensor per augmenting model "
                                        f"({count}: a list when several)")
    lists = [[v] if isinstance(v, torch.Tensor) else list(v)
             for v in (augmenting_input_ids, augmenting_attention_mask, augmenting_visible)]
    for a, (ids, mask, visible) in enumerate(zip(*lists)):
        if ids.shape != mask.shape or ids.shape[0] != input_ids.shape[0]:
            raise CompositionInputError(f"augmenting model {a}: augmenting_input_ids {tuple(ids.shape)} and "
                                        f"augmenting_attention_mask {tuple(mask.shape)} must have one row per "
                                        f"row of input_ids ({input_ids.shape[0]})")
        if visible.shape != input_ids.shape:
            raise CompositionInputError(f"augmenting model {a}: augmenting_visible has shape {tuple(visible.shape)}"
                                        f"; expected that of input_ids, {tuple(input_ids.shape)}")
