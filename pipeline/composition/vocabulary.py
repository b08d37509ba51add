"""A pretrained causal LM cut to a restricted vocabulary: the rows of the ids a world's compact tokenizer keeps.

A world whose tokenizer is a pretrained one restricted to the ids its text uses (pipeline/tokenization.py,
`tokenizer.restrict`) numbers those ids 0..k-1; a pretrained model used there as an `init` must read and predict
the same ids, so its input embeddings and output head keep the rows of the kept original ids, in that order.
Logits over the kept ids are then exactly the original model's logits at those ids (the softmax renormalises
over the kept ones only).
"""
from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel

from .base_models import text_config

SPECIAL_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


def _renumbered(value, new_id: dict[int, int]):
    """An id (or a list of ids, as generation configs hold several eos ids) in compact numbering; an id the
    compact vocabulary lacks is a token the world's tokenizer can never produce, so it goes (None)."""
    if isinstance(value, (list, tuple)):
        kept = [new_id[v] for v in value if v in new_id]
        return kept or None
    return None if value is None else new_id.get(value)


def _gathered(weight: torch.Tensor, index: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(weight.detach().index_select(0, index.to(weight.device)).clone(),
                        requires_grad=weight.requires_grad)


def restrict_vocabulary(model: PreTrainedModel, kept_ids: list[int]) -> PreTrainedModel:
    """`model` (in place, returned) with vocabulary `kept_ids`: compact id i is original id kept_ids[i].

    Gathers the input embedding rows and the output head rows (and its bias) at kept_ids; a tied head stays tied
    to the new embeddings. Sets vocab_size and renumbers the special token ids of the config and the generation
    config (an id that is not kept becomes None)."""
    index = torch.tensor(kept_ids, dtype=torch.long)
    new_id = {old: new for new, old in enumerate(kept_ids)}
    embeddings, head = model.get_input_embeddings(), model.get_output_embeddings()
    tied = head is not None and head.weight is embeddings.weight
    embeddings.weight = _gathered(embeddings.weight, index)
    embeddings.num_embeddings = len(kept_ids)
    if getattr(embeddings, "padding_idx", None) is not None:
        embeddings.padding_idx = new_id.get(embeddings.padding_idx)
    if head is not None:
        head.weight = embeddings.weight if tied else _gathered(head.weight, index)
        if getattr(head, "bias", None) is not None:
            head.bias = _gathered(head.bias, index)
        head.out_features = len(kept_ids)
    configs = {id(c): c for c in (model.config, text_config(model))}  # often one object: renumber it once
    for config in configs.values():
        if hasattr(config, "vocab_size"):
            config.vocab_size = len(kept_ids)  # the loss reshapes logits by it
    if hasattr(model, "vocab_size"):
        model.vocab_size = len(kept_ids)
    for config in [*configs.values(), getattr(model, "generation_config", None)]:
        for key in SPECIAL_IDS:
            if config is not None and getattr(config, key, None) is not None:
                setattr(config, key, _renumbered(getattr(config, key), new_id))
    return model
