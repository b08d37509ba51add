"""Configuration of a CALM composition: which bases, which layers are connected, and how."""

from __future__ import annotations

import inspect
from numbers import Integral, Real

from transformers import PreTrainedConfig

from pipeline.errors import UserError

MODES = ("iterative", "encoder")

class CompositionConfigError(UserError, ValueError):
    """A composition was asked for something its base models cannot give (bad layers, widths, modes, options)."""


class CompositionInputError(CompositionConfigError):
    """A composition's forward() or generate() was given inputs it cannot use (empty, mismatched, missing)."""


def _is_int(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def check_num_heads(num_heads, anchor_width: int | None = None, rotary: bool = False):
    """num_heads must be a positive integer (None = the anchor's head count) that divides the anchor's width."""
    if num_heads is None:
        return None
    width = f" dividing the anchor width {anchor_width}" if anchor_width else ""
    if not _is_int(num_heads) or num_heads <= 0 or (anchor_width and anchor_width % num_heads):
        raise CompositionConfigError(
            f"num_heads must be a positive integer{width} (or None for the anchor's head count), not {num_heads!r}"
        )
    if rotary and anchor_width and (anchor_width // num_heads) % 2:
        raise CompositionConfigError(
            f"rotary positions need an even head size: num_heads={num_heads} gives {anchor_width // num_heads} "
            f"(anchor width {anchor_width}); choose other num_heads or rotary=False"
        )
    return int(num_heads)


def default_connections(num_augmenting_layers: int, num_anchor_layers: int, layers_per_connection: int = 4):
    """The paper's choice: n = N_A / 4 connections, every 4th layer of mA mapped uniformly onto mB's layers.

    We take the last layer of each block of `layers_per_connection` mA layers (so the deepest connection reads mA's
    last layer) and the matching fraction of mB's depth, e.g. N_A=24, N_B=32: mA 3,7,...,23 -> mB 4,9,...,31.
    """
    if not _is_int(layers_per_connection) or layers_per_connection <= 0:
        raise CompositionConfigError(f"layers_per_connection must be a positive integer, not {layers_per_connection!r}")
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


def check_lexical_start(value) -> dict | None:
    """None, or {strength, slope}: two positive numbers (CALMConfig.lexical_start)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"strength", "slope"} or not all(
            _is_real(value[k]) and value[k] > 0 for k in ("strength", "slope")):
        raise CompositionConfigError(f"lexical_start must be null or {{strength: <number > 0>, slope: <number > 0>}}, "
                                     f"not {value!r}")
    return {"strength": float(value["strength"]), "slope": float(value["slope"])}


class CALMConfig(PreTrainedConfig):
    r"""
    anchor (`dict`): the anchor mB as recorded by `base_models.describe` (source, widths, depth, fingerprint).
    augmenting (`list[dict]`): one record per augmenting model mA, each with its `connections`, a list of
        `[mA layer, mB layer]` pairs (0-based; "after layer i" means the output of decoder layer i).
    mode (`str`): "iterative" (CALM: mA reads the same growing sequence; causal cross-attention) or "encoder"
        (the paper's §4.4 ablation: mA reads the prompt once; every position of mB may read all of it).
    num_heads (`int`): heads of each cross-attention, a positive integer dividing the anchor's width; None = the
        anchor's head count (the composition writes the count it used here).
    normalize_inputs (`bool`): RMS-normalise (without parameters) the query and key/value inputs of each
        cross-attention, so the two models' residual-stream scales do not matter. Adds no parameters.
    rotary (`bool`): rotate queries and keys by their token positions (RoPE, base `rotary_theta`), so that mB can
        attend to mA by relative position (e.g. to mA's state at its own token). Adds no parameters. The paper
        does not say whether its cross-attention sees positions; `rotary=False` gives the position-free variant.
    recency_bias (`bool`): add ALiBi's per-head linear bias over the distance, in readable mA states, from each
        query's latest readable state (`CrossAttention._recency_bias`): some heads then read mA's latest states
        from the first step and others all of them, where plain attention starts near uniform over mA's tokens and
        must learn where to look from the gradient through W_O alone. Adds no parameters. Saved only when true.
    final_norm (`bool`): a connection from mA's last layer reads mA's final hidden state after its final norm (what
        `output_hidden_states` returns as the last entry in transformers), not the last block's raw output. That
        state is what mA's own LM head reads; on Table 1 the copy of mA's values generalises better from it.
    attention_dropout (`float`): dropout on the cross-attention probabilities while training (none at inference).
    augmenting_dropout (`float`): dropout on mA's states where the composition reads them (the input of each
        f_proj) while training (none at inference). With few held-in examples, the projection otherwise leans on
        whatever features of mA's states single them out, instead of the ones that generalise.
    read_pending (`bool`): cross-tokenizer compositions only. Anchor token t also reads mA's states on the text
        after mA's committed tokens (its last, unstable chunk), tokenized by mA as the text stands at t, never
        committed as such (alignment.py, `PendingLayout`). Without it mA's freshest state is a chunk behind the
        anchor (about a word), so its prediction of the next token arrives too late to be read. A tail the text then
        commits as it was shares its slots, so mA runs on ~1.15 times its tokens. Saved only when true, so
        compositions made without it keep their bytes.
    lexical_start (`dict`): cross-tokenizer compositions only, e.g. `{strength: 0.25, slope: 4.0}`. Each mA's
        deepest connection (mA's last layer, after its final norm, into mB's last layer) starts out carrying mA's
        next-token prediction into mB's vocabulary (lexical_start.py): f_proj is the least-squares map between the
        two output embedding tables over the token strings both vocabularies hold, and W_O scales it so that mB's
        logits move by `strength` times those of the map; its queries start at zero and every head carries an ALiBi
        bias of `slope`, so it reads mA's latest state. The other connections start as usual. Needs
        `lexical_texts` in from_models (a few training texts, to measure the two residual scales). Saved only when
        set.
    layers_per_connection (`int`): how `from_models` chose the default connections (one per block of this many mA
        layers, paper: 4); recorded for the reader. The connections in `augmenting` are what the model uses.

    Cross-tokenizer compositions (built with a `CALMProcessor`, alignment.py) record each model's tokenizer in its
    record, `tokenizer`: its source (if known), its size and the digest of its tokenizer.json; `cross_tokenizer`
    says whether the composition is one.

    `CALM_OPTIONS` lists these options (with `connections`) as `CALMForCausalLM.from_models` accepts them.
    """

    model_type = "calm"

    anchor: dict | None = None
    augmenting: list | None = None
    mode: str = "iterative"
    num_heads: int | None = None
    normalize_inputs: bool = True
    rotary: bool = True
    rotary_theta: float = 10000.0
    recency_bias: bool = False
    final_norm: bool = False
    attention_dropout: float = 0.0
    augmenting_dropout: float = 0.0
    read_pending: bool = False
    lexical_start: dict | None = None
    layers_per_connection: int = 4
    vocab_size: int | None = None

    def __post_init__(self, **kwargs):
        if self.mode not in MODES:
            raise CompositionConfigError(f"mode must be one of {MODES}, not {self.mode!r}")
        for name in ("normalize_inputs", "rotary", "final_norm", "read_pending", "recency_bias"):
            if not isinstance(getattr(self, name), bool):
                raise CompositionConfigError(f"{name} must be true or false, not {getattr(self, name)!r}")
        if not _is_real(self.rotary_theta) or not self.rotary_theta > 0:
            raise CompositionConfigError(f"rotary_theta must be a positive number, not {self.rotary_theta!r}")
        for name in ("attention_dropout", "augmenting_dropout"):
            value = getattr(self, name)
            if not _is_real(value) or not 0.0 <= value < 1.0:
                raise CompositionConfigError(f"{name} must be in [0, 1), not {value!r}")
        if not _is_int(self.layers_per_connection) or self.layers_per_connection <= 0:
            raise CompositionConfigError(
                f"layers_per_connection must be a positive integer, not {self.layers_per_connection!r}"
            )
        self.lexical_start = check_lexical_start(self.lexical_start)
        if self.cross_tokenizer and self.mode != "iterative":
            raise CompositionConfigError("a cross-tokenizer composition runs in mode='iterative' only")
        anchor_width = self.anchor.get("hidden_size") if isinstance(self.anchor, dict) else None
        self.num_heads = check_num_heads(self.num_heads, anchor_width, self.rotary)
        super().__post_init__(**kwargs)

    def to_dict(self) -> dict:
        out = super().to_dict()
        for name in LATER_SWITCHES:  # absent = false: a composition made without them saves what it saved before
            if not out.get(name):
                out.pop(name, None)
        return out

    @property
    def cross_tokenizer(self) -> bool:
        """Whether the models have different tokenizers (the records name them; alignment.py aligns them)."""
        return isinstance(self.anchor, dict) and self.anchor.get("tokenizer") is not None


# Options added after compositions were published; written to config.json only when on, so that those keep their bytes
LATER_SWITCHES = ("read_pending", "recency_bias", "lexical_start")
READ_PENDING_NEEDS_TWO_TOKENIZERS = ("read_pending is for cross-tokenizer compositions (models with different "
                                     "tokenizers, given a CALMProcessor); with one tokenizer mA reads every token "
                                     "the anchor reads")

# CALMConfig's own fields that from_models fills from the models themselves: records, not options a caller sets
MODEL_RECORDS = ("anchor", "augmenting", "vocab_size")
# The keyword options of CALMForCausalLM.from_models(anchor, augmenting, **options): `connections` (where mA meets
# mB) and every field CALMConfig declares beyond PreTrainedConfig's, but the records. Derived, so that a field added
# to CALMConfig is an option at once. A pipeline's composition block may hold exactly these keys (None = default).
CALM_OPTIONS = ("connections", *(name for name in inspect.get_annotations(CALMConfig) if name not in MODEL_RECORDS))
