"""The CALM composition: frozen anchor mB + frozen augmenting mA, learned cross-attention between them."""

from .base_models import ModelLoadError, load_causal_lm, load_tokenizer, resolve_model_path
from .configuration_calm import CALMConfig, CompositionConfigError, default_connections
from .modeling_calm import CALMCache, CALMForCausalLM, CompositionLoadError, CrossAttention

__all__ = [
    "CALMCache",
    "CALMConfig",
    "CALMForCausalLM",
    "CompositionConfigError",
    "CompositionLoadError",
    "CrossAttention",
    "ModelLoadError",
    "default_connections",
    "load_causal_lm",
    "load_tokenizer",
    "resolve_model_path",
]
