"""Configuration of a CALM composition: which bases, which layers are connected, and how."""

from __future__ import annotations

from transformers import PreTrainedConfig

from pipeline.errors import UserError

MODES = ("iterative", "encoder")


class CompositionConfigError(UserError, ValueError):
    """A composition was asked for something its base models cannot give (bad layers, widths, modes)."""


def default_connections(num_augmenting_layers: int, num_anchor_layers: int, layers_per_connection: int = 4):
    """The paper's choice: n = N_A / 4 connections, every 4th layer of mA mapped uniformly onto mB's layers.

    We take the last layer of each block of `layers_per_connection` mA layers (so the deepest connection reads mA's
    last layer) and the matching fraction of mB's depth, e.g. N_A=24, N_B=32: mA 3,7,...,23 -> mB 4,9,...,31.
    """
    n = max(1, num_augmenting_layers // layers_per_connection)
    pairs = []
    for k in range(1, n + 1):
        augmenting_layer = round(k * num_augmenting_layers / n) - 1
        anchor_layer = round(k * num_anchor_layers / n) - 1
        pairs.append((augmenting_layer, anchor_layer))
    return pairs


def validate_connections(connections, num_augmenting_layers: int, num_anchor_layers: int, which: str):
    """Check an explicit list of (mA layer, mB layer) pairs; return it as a list of int tuples."""
    if not isinstance(connections, (list, tuple)) or len(connections) == 0:
        raise CompositionConfigError(f"{which}: connections must be a non-empty list of (mA layer, mB layer) pairs")
    checked = []
    for pair in connections:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(x, int) for x in pair):
            raise CompositionConfigError(f"{which}: connection {pair!r} is not a pair of integer layer indices")
        augmenting_layer, anchor_layer = pair
        if not 0 <= augmenting_layer < num_augmenting_layers:
            raise CompositionConfigError(
                f"{which}: mA layer {augmenting_layer} is out of range (mA has {num_augmenting_layers} layers)"
            )
        if not 0 <= anchor_layer < num_anchor_layers:
            raise CompositionConfigError(
                f"{which}: mB layer {anchor_layer} is out of range (mB has {num_anchor_layers} layers)"
            )
        checked.append((augmenting_layer, anchor_layer))
    if len(set(checked)) != len(checked):
        raise CompositionConfigError(f"{which}: connections {connections!r} repeat a pair")
    return checked


class CALMConfig(PreTrainedConfig):
    r"""
    anchor (`dict`): the anchor mB as recorded by `base_models.describe` (source, widths, depth, fingerprint).
    augmenting (`list[dict]`): one record per augmenting model mA, each with its `connections`, a list of
        `[mA layer, mB layer]` pairs (0-based; "after layer i" means the output of decoder layer i).
    mode (`str`): "iterative" (CALM: mA reads the same growing sequence; causal cross-attention) or "encoder"
        (the paper's §4.4 ablation: mA reads the prompt once; every position of mB may read all of it).
    num_heads (`int`): heads of each cross-attention; defaults to the anchor's head count.
    normalize_inputs (`bool`): RMS-normalise (without parameters) the query and key/value inputs of each
        cross-attention, so the two models' residual-stream scales do not matter. Adds no parameters.
    rotary (`bool`): rotate queries and keys by their token positions (RoPE, base `rotary_theta`), so that mB can
        attend to mA by relative position (e.g. to mA's state at its own token). Adds no parameters. The paper
        does not say whether its cross-attention sees positions; `rotary=False` gives the position-free variant.
    final_norm (`bool`): a connection from mA's last layer reads mA's final hidden state after its final norm (what
        `output_hidden_states` returns as the last entry in transformers), not the last block's raw output. That
        state is what mA's own LM head reads; on Table 1 the copy of mA's values generalises better from it.
    attention_dropout (`float`): dropout on the cross-attention probabilities while training (none at inference).
    augmenting_dropout (`float`): dropout on mA's states where the composition reads them (the input of each
        f_proj) while training (none at inference). With few held-in examples, the projection otherwise leans on
        whatever features of mA's states single them out, instead of the ones that generalise.
    """

    model_type = "calm"

    anchor: dict | None = None
    augmenting: list | None = None
    mode: str = "iterative"
    num_heads: int | None = None
    normalize_inputs: bool = True
    rotary: bool = True
    rotary_theta: float = 10000.0
    final_norm: bool = False
    attention_dropout: float = 0.0
    augmenting_dropout: float = 0.0
    vocab_size: int | None = None

    def __post_init__(self, **kwargs):
        if self.mode not in MODES:
            raise CompositionConfigError(f"mode must be one of {MODES}, not {self.mode!r}")
        for name in ("attention_dropout", "augmenting_dropout"):
            if not 0.0 <= float(getattr(self, name)) < 1.0:
                raise CompositionConfigError(f"{name} must be in [0, 1), not {getattr(self, name)!r}")
        super().__post_init__(**kwargs)
