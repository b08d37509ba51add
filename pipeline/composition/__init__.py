"""The CALM composition: frozen anchor mB + frozen augmenting mA, learned cross-attention between them."""

from .alignment import CALMProcessor
from .base_models import ModelLoadError, load_causal_lm, load_tokenizer, resolve_model_path
from .configuration_calm import (
    CALM_OPTIONS,
    CALMConfig,
    CompositionConfigError,
    CompositionInputError,
    default_connections,
)
from .cross_attention import CALMCache, CrossAttention
from .loading_checks import CompositionLoadError
from .modeling_calm import CALMForCausalLM

__all__ = [
    "CALM_OPTIONS",
    "CALMCache",
    "CALMConfig",
    "CALMProcessor",
    "CALMForCausalLM",
    "CompositionConfigError",
    "CompositionInputError",
    "CompositionLoadError",
    "CrossAttention",
    "ModelLoadError",
    "default_connections",
    "load_causal_lm",
    "load_tokenizer",
    "resolve_model_path",
]
