"""An existing model made to read the world's tokenizer (`_fit_vocabulary`): for a kind's `init` model and for the
architectures a LoRA's parity is counted on."""
from __future__ import annotations

from pipeline.errors import PipelineError


def _fit_vocabulary(model, tokenizer, what: str):
    """An init model made to read the world's tokenizer: cut to its kept ids when the world's tokenizer is a
    restricted one (tokenizer.restrict) and the model has the original tokenizer's embeddings, else unchanged;
    refused in one line when its embeddings cannot be the tokenizer's."""
    vocab = model.get_input_embeddings().weight.shape[0]
    vmap = getattr(tokenizer, "vocabulary_map", None)
    if vmap:
        original, kept = vmap["original_vocab_size"], vmap["kept_ids"]
        if vocab >= original:  # the original's model (more rows than tokens: Qwen2.5 pads 151,665 tokens to 151,936)
            from pipeline.composition.vocabulary import restrict_vocabulary

            return restrict_vocabulary(model, kept)
        if vocab != len(kept):
            raise PipelineError(f"{what} has {vocab:,} embeddings: neither the world's restricted vocabulary "
                                f"({len(kept):,}) nor that of the tokenizer it restricts ({vmap['source']}, {original:,})")
    elif vocab < len(tokenizer):
        raise PipelineError(f"{what} has {vocab} embeddings but the world's tokenizer has {len(tokenizer)} tokens: "
                            f"use the init model's tokenizer for this world")
    return model
