"""CALM: an anchor LM mB composed with augmenting LMs mA through learned cross-attention (Bansal et al., 2024, §3).

Read top to bottom (CrossAttention and CALMCache are in cross_attention.py, the forward hooks and each mode's
keys/values in keys_values.py, the checks of forward()'s inputs in input_checks.py, the checks of a saved composition
against its bases in loading_checks.py):
  CrossAttention  one connection: f_proj (D_A -> D_B) then multi-head attention, queries from mB, keys/values from mA.
  CALMCache       what decoding carries from step to step: each base model's own KV cache, and per connection the
                  cross-attention keys/values of every mA position seen so far.
  CALMForCausalLM the composed model: runs each mA up to its deepest connected layer, then mB, whose connected
                  layers add the cross-attention output to their own output (a forward hook per connected layer).
                  With a CALMProcessor (alignment.py) the models may have different tokenizers: each mA reads its
                  own tokens of the same text, and anchor token t reads the mA tokens that are stable by its end.

The base models stay untouched transformers models: the hooks do nothing unless a CALM forward is under way, and
only the CrossAttention parameters train.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .alignment import CALMProcessor
from .base_models import describe, final_norm, load_causal_lm, text_config, truncated_backbone
from .configuration_calm import (CALMConfig, CALM_OPTIONS, READ_PENDING_NEEDS_TWO_TOKENIZERS, CompositionConfigError, CompositionInputError,
                                 default_connections, validate_connections)
from .cross_attention import CALMCache, CrossAttention, _AnchorStep, _positions_from_mask
from .input_checks import check_cross_inputs, check_inputs
from .keys_values import CALMKeysValuesMixin
from .lexical_start import NEEDS_TWO_TOKENIZERS as LEXICAL_NEEDS_TWO_TOKENIZERS, lexical_connection, start_lexically
from .loading_checks import (CompositionLoadError, _check_bases, _check_processor, _check_vocabulary, _processor_for,
                             _source)


WEIGHTS_NAME = "model.safetensors"


class CALMForCausalLM(CALMKeysValuesMixin, PreTrainedModel, GenerationMixin):
    config_class = CALMConfig
    base_model_prefix = "anchor"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False  # a recomputed anchor layer would run without its cross-attention

    def __init__(self, config: CALMConfig, anchor: PreTrainedModel, augmenting: list[PreTrainedModel],
                 processor: CALMProcessor | None = None):
        super().__init__(config)
        if not isinstance(config.augmenting, list) or not config.augmenting:
            raise CompositionConfigError("the config names no augmenting models (build it with from_models)")
        if len(augmenting) != len(config.augmenting):
            raise CompositionConfigError(
                f"the config names {len(config.augmenting)} augmenting models but {len(augmenting)} were given"
            )
        anchor_config = text_config(anchor)
        if config.cross_tokenizer:
            _check_processor(processor, len(augmenting))
        self.processor = processor if config.cross_tokenizer else None
        if config.read_pending and not config.cross_tokenizer:
            raise CompositionConfigError(READ_PENDING_NEEDS_TWO_TOKENIZERS)
        if config.lexical_start and not config.cross_tokenizer:
            raise CompositionConfigError(LEXICAL_NEEDS_TWO_TOKENIZERS)
        if config.num_heads is None:  # the default, written down so that the saved config says what was built
            config.num_heads = anchor_config.num_attention_heads
        self.anchor = anchor
        backbones, bridges, augmenting_layers, final_norms, lexical_connections = [], [], [], [], []
        for index, (model, record) in enumerate(zip(augmenting, config.augmenting)):
            connections = validate_connections(
                [tuple(pair) for pair in record["connections"]],
                text_config(model).num_hidden_layers,
                anchor_config.num_hidden_layers,
                f"augmenting model {index}",
            )
            backbone, layers = truncated_backbone(model, max(i for i, _ in connections))
            last = text_config(model).num_hidden_layers - 1
            reads_last = config.final_norm and any(i == last for i, _ in connections)
            final_norms.append((final_norm(model), last) if reads_last else None)
            backbones.append(backbone)
            augmenting_layers.append(layers)
            width = text_config(model).hidden_size
            lexical = (lexical_connection(connections, last + 1, anchor_config.num_hidden_layers, config.final_norm,
                                          f"augmenting model {index}") if config.lexical_start else None)
            lexical_connections.append(lexical)
            slope = config.lexical_start["slope"] if config.lexical_start else None
            bridges.append(nn.ModuleList(
                CrossAttention(config, width, anchor_config.hidden_size, slope=slope if k == lexical else None)
                for k in range(len(connections))
            ))
        self.augmenting = nn.ModuleList(backbones)
        self._augmenting_layers = augmenting_layers  # plain references; the modules are registered via the backbones
        self._final_norms = final_norms  # per mA: (final norm, last layer index) if a connection reads after it
        self.bridges = nn.ModuleList(bridges)
        self._lexical_connections = lexical_connections  # per mA: the connection a lexical start sets (or None)
        self._connections = [
            [tuple(pair) for pair in record["connections"]] for record in config.augmenting
        ]

        for base in (self.anchor, self.augmenting):
            base.requires_grad_(False)
            base.eval()

        self._step: _AnchorStep | None = None  # set only while a CALM forward runs the anchor
        self._captured: dict | None = None  # set only while a CALM forward runs an mA
        self._register_hooks()
        self.generation_config = copy.deepcopy(anchor.generation_config)
        self.post_init()
        # The classes a device_map never splits and accelerate's FSDP wraps as units of their own (the bases' decoder
        # layers): post_init gathers the anchor's (a child model); each mA's backbone sits in a ModuleList, so add its.
        for backbone in self.augmenting:
            self._no_split_modules.update(getattr(backbone, "_no_split_modules", None) or ())
        # Checkpoints hold the composition only; tell Trainer's resume that the bases' keys are absent on purpose.
        self._keys_to_ignore_on_save = {k for k in self.state_dict() if not k.startswith("bridges.")}

    # ----- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_models(
        cls,
        anchor: PreTrainedModel,
        augmenting: PreTrainedModel | list[PreTrainedModel],
        connections=None,
        processor: CALMProcessor | None = None,
        lexical_texts: list[str] | None = None,
        **options,
    ) -> "CALMForCausalLM":
        """Compose `anchor` with `augmenting` (one model or a list).

        connections: None for the paper's default (every `layers_per_connection`-th mA layer, mapped uniformly onto
        mB), a list of (mA layer, mB layer) pairs when there is one mA, or one such list per mA.
        options: any CALMConfig option by keyword (`CALM_OPTIONS`: every field CALMConfig declares but the records
        from_models fills from the models, e.g. mode, num_heads, rotary, final_norm); None or absent = the default,
        so a configuration block can be passed straight through: `from_models(mB, mA, **block)`.
        An unknown keyword or a bad value fails at once with one line (CompositionConfigError).

        The models' weights are used, not copied, and frozen in place (requires_grad=False; their layers in eval
        mode); the anchor gets forward hooks that act only during a composition's forward. Each mA object is left
        whole: the composition runs mA through its own shallow copy of mA's base model, whose layer list holds only
        the layers up to the deepest connection (a few new container objects; no tensor is copied, so no memory is
        added for weights). The caller's mA keeps all its layers, its LM head and its config and gives the same
        outputs as before; once the caller drops it, its LM head and the layers past the deepest connection are
        freed. Moving or casting the composition (`.to(...)`) moves those shared modules too, as it does the anchor.
        An mA that is also the anchor, or is listed twice, is deep-copied (a copy of its weights).

        processor: a CALMProcessor(anchor tokenizer, augmenting tokenizer(s)) when the tokenizers differ: each mA then
        reads its own tokens of the same text (alignment.py); the saved config names every tokenizer. Without it, mA
        and mB must share one tokenizer.

        lexical_texts: a few training texts, with the option lexical_start (lexical_start.py measures the two
        models' residual scales on them).
        """
        unknown = sorted(set(options) - set(CALM_OPTIONS))
        if unknown:
            raise CompositionConfigError(
                f"from_models: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                f"the options are {', '.join(CALM_OPTIONS)}"
            )
        options = {k: v for k, v in options.items() if v is not None}  # None = the default, as a conf block's null
        if options.get("read_pending") and processor is None:
            raise CompositionConfigError(READ_PENDING_NEEDS_TWO_TOKENIZERS)
        augmenting = [augmenting] if isinstance(augmenting, PreTrainedModel) else list(augmenting)
        if not augmenting:
            raise CompositionConfigError("a composition needs at least one augmenting model")
        anchor_config = text_config(anchor)
        if processor is not None:
            _check_processor(processor, len(augmenting))
            _check_vocabulary("the anchor", processor.anchor_tokenizer, anchor_config.vocab_size)
            anchor_tokenizer, augmenting_tokenizers = processor.records()
        # Every option checked (num_heads against the anchor's width too) before any work on the models.
        settings = CALMConfig(anchor={"hidden_size": anchor_config.hidden_size}, **options)
        if connections is not None:
            if len(connections) == 0:
                raise CompositionConfigError("connections must be a non-empty list of (mA layer, mB layer) pairs")
            single = len(connections) > 0 and isinstance(connections[0], (list, tuple)) and connections[0] and isinstance(
                connections[0][0], int
            )
            connections = [connections] if single else list(connections)
            if len(connections) != len(augmenting):
                raise CompositionConfigError(
                    f"{len(connections)} connection lists given for {len(augmenting)} augmenting models"
                )
        records = []
        for index, model in enumerate(augmenting):
            if model is anchor or any(model is other for other in augmenting[:index]):
                # One object in two roles would carry both roles' hooks and share their state: give mA its own.
                model = augmenting[index] = copy.deepcopy(model)
            config = text_config(model)
            if processor is not None:
                _check_vocabulary(f"augmenting model {index}", processor.augmenting_tokenizers[index], config.vocab_size)
            elif config.vocab_size != anchor_config.vocab_size:
                raise CompositionConfigError(
                    f"augmenting model {index} has a vocabulary of {config.vocab_size} tokens and the anchor "
                    f"{anchor_config.vocab_size}: mA and mB must share one tokenizer (or pass "
                    "processor=CALMProcessor(anchor tokenizer, augmenting tokenizer))"
                )
            pairs = (
                default_connections(
                    config.num_hidden_layers, anchor_config.num_hidden_layers, settings.layers_per_connection
                )
                if connections is None
                else validate_connections(
                    connections[index], config.num_hidden_layers, anchor_config.num_hidden_layers,
                    f"augmenting model {index}",
                )
            )
            records.append({**describe(model), "connections": [list(pair) for pair in pairs]})
            if processor is not None:
                records[-1]["tokenizer"] = augmenting_tokenizers[index]
        options["num_heads"] = settings.num_heads or anchor_config.num_attention_heads
        anchor_record = describe(anchor)
        if processor is not None:
            anchor_record["tokenizer"] = anchor_tokenizer
        config = CALMConfig(anchor=anchor_record, augmenting=records, vocab_size=anchor_config.vocab_size, **options)
        model = cls(config, anchor, augmenting, processor=processor)
        if config.lexical_start:
            start_lexically(model, augmenting, lexical_texts)
        return model

    def _init_weights(self, module):
        if isinstance(module, CrossAttention):
            module.reset_parameters()

    def train(self, mode: bool = True):
        super().train(mode)
        self.anchor.eval()  # frozen bases never train: no dropout in them, ever
        self.augmenting.eval()
        return self

    def get_input_embeddings(self):
        return self.anchor.get_input_embeddings()

    def get_output_embeddings(self):
        return self.anchor.get_output_embeddings()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # forward() builds its own CALMCache

    # ----- parameters ---------------------------------------------------------------------------------------
    def num_composition_parameters(self) -> int:
        return sum(p.numel() for p in self.bridges.parameters())

    def parameter_count_report(self) -> dict:
        """Added parameters, and Appendix C's formula n*(D_A*D_B + 3*D_B^2) without and with our W_O (n*D_B^2)."""
        anchor_width = text_config(self.anchor).hidden_size
        paper = with_output = 0
        for record in self.config.augmenting:
            n = len(record["connections"])
            paper += n * (record["hidden_size"] * anchor_width + 3 * anchor_width**2)
            with_output += n * anchor_width**2
        return {"actual": self.num_composition_parameters(), "paper_formula": paper, "paper_formula_plus_w_o": paper + with_output}

    # ----- forward ------------------------------------------------------------------------------------------
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: CALMCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        augmenting_input_ids: torch.LongTensor | list | None = None,
        augmenting_attention_mask: torch.Tensor | list | None = None,
        augmenting_visible: torch.LongTensor | list | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs,
    ) -> CausalLMOutputWithPast:
        """Cross-tokenizer compositions also take each mA's own tokens (augmenting_input_ids, right-padded, with
        augmenting_attention_mask) and augmenting_visible [B, T] (how many of them each anchor token may read), as
        CALMProcessor makes them; tensors for one mA, lists for several. Without them (and always when decoding
        with a cache) the composition aligns the anchor's ids itself."""
        if self.config.cross_tokenizer:
            check_cross_inputs(input_ids, augmenting_input_ids, augmenting_attention_mask, augmenting_visible,
                               len(self.augmenting))
        else:
            if augmenting_visible is not None:
                raise CompositionInputError("augmenting_visible is for cross-tokenizer compositions (built with a "
                                            "processor); this one's models share one tokenizer")
            check_inputs(input_ids, augmenting_input_ids, augmenting_attention_mask, self.config.mode)
        cache = past_key_values
        if cache is None and use_cache:
            cache = CALMCache(len(self.augmenting))
        past = cache.length if cache is not None else 0
        batch, new = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(batch, past + new, dtype=torch.long, device=input_ids.device)
        if attention_mask.shape != (batch, past + new):
            raise CompositionInputError(
                f"attention_mask has shape {tuple(attention_mask.shape)}; expected {(batch, past + new)} "
                "(the cached tokens and the new ones)"
            )
        if position_ids is None:
            position_ids = _positions_from_mask(attention_mask)[:, past:]

        if self.config.cross_tokenizer and self.config.read_pending:
            step = self._pending_keys_values(input_ids, attention_mask, cache, past)
        elif self.config.cross_tokenizer:
            step = self._cross_keys_values(
                input_ids, attention_mask, cache, past, augmenting_input_ids, augmenting_attention_mask,
                augmenting_visible,
            )
        elif self.config.mode == "iterative":
            step = self._iterative_keys_values(input_ids, attention_mask, position_ids, cache, past)
        else:
            step = self._encoder_keys_values(
                input_ids, attention_mask, position_ids, augmenting_input_ids, augmenting_attention_mask, cache
            )

        self._step = step
        try:
            outputs = self.anchor(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                past_key_values=cache.anchor if cache is not None else None,
                use_cache=cache is not None,
                labels=labels,
                logits_to_keep=logits_to_keep,
                **kwargs,
            )
        finally:
            self._step = None
        if cache is not None:
            cache.anchor = outputs.past_key_values
            cache.length = past + new
        return CausalLMOutputWithPast(loss=outputs.loss, logits=outputs.logits, past_key_values=cache)

    # ----- generation ---------------------------------------------------------------------------------------
    def generate(self, inputs=None, **kwargs):
        """transformers' generate(); a cross-tokenizer composition also takes the anchor's prompt as text (a string
        or a list of strings, left-padded here) and aligns each mA itself, step by step. Greedy decoding, sampling
        and beam search (CALMCache.reorder_cache). Returns the anchor's ids (decode them with
        `processor.anchor_tokenizer`)."""
        if isinstance(inputs, str) or (isinstance(inputs, (list, tuple)) and inputs and isinstance(inputs[0], str)):
            if self.processor is None:
                raise CompositionInputError("generate() takes text only in a cross-tokenizer composition; tokenize "
                                            "the prompt with the anchor's tokenizer")
            inputs, mask = self.processor.anchor_batch(inputs, padding_side="left")
            inputs, kwargs["attention_mask"] = inputs.to(self.device), mask.to(self.device)
            kwargs.setdefault("pad_token_id", self.processor.anchor_pad_id)
        if self.config.mode == "encoder" and kwargs.get("augmenting_input_ids") is None:
            # mA must keep reading the prompt only, also when generate() recomputes without a cache.
            kwargs["augmenting_input_ids"] = inputs if inputs is not None else kwargs.get("input_ids")
            kwargs.setdefault("augmenting_attention_mask", kwargs.get("attention_mask"))
        return super().generate(inputs, **kwargs)

    # ----- saving and loading -------------------------------------------------------------------------------
    def composition_state_dict(self) -> dict[str, torch.Tensor]:
        return {f"bridges.{k}": v for k, v in self.bridges.state_dict().items()}

    def save_pretrained(self, save_directory, state_dict=None, **kwargs):
        """Write the config and the composition parameters only; the bases are named in the config, not copied. A
        cross-tokenizer composition also writes its tokenizers (CALMProcessor.save_pretrained: a few MB)."""
        directory = Path(save_directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.processor is not None:
            self.processor.save_pretrained(directory)
        state = state_dict if state_dict is not None else self.composition_state_dict()
        tensors = {k: v.detach().cpu().contiguous() for k, v in state.items() if k.startswith("bridges.")}
        partial = directory / (WEIGHTS_NAME + ".partial")
        save_file(tensors, partial, metadata={"format": "pt"})
        self.config.save_pretrained(directory)
        self.generation_config.save_pretrained(directory)
        os.replace(partial, directory / WEIGHTS_NAME)  # last, so a directory with weights is a complete one

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, anchor=None, augmenting=None, processor=None,
                        **base_kwargs):
        """Load a saved composition. Bases are loaded from the paths its config names unless given here.

        A cross-tokenizer composition also needs its tokenizers: `processor`, else those saved beside it, else the
        sources its config names; each must be the one it was trained with (its tokenizer.json digest is checked).

        The bases must be the ones it was trained with: their shapes and weight fingerprints are checked (a
        composition saved with the first fingerprint scheme, input embeddings only, is checked with that scheme,
        with a warning; saving it again records the full one).
        """
        directory = Path(pretrained_model_name_or_path)
        config_file = directory / "config.json"
        if config_file.is_file():
            try:
                model_type = json.loads(config_file.read_text()).get("model_type")
            except (ValueError, AttributeError):  # not JSON, or not a JSON object
                raise CompositionLoadError(f"{config_file} is not a JSON object: not a saved composition") from None
            if model_type != CALMConfig.model_type:
                what = f"a {model_type} model" if model_type else "a config.json without a model_type"
                raise CompositionLoadError(
                    f"{directory} holds {what}, not a saved CALM composition; compose it with "
                    "CALMForCausalLM.from_models (load it with load_causal_lm)"
                )
        if not (directory / WEIGHTS_NAME).is_file() or not config_file.is_file():
            raise CompositionLoadError(f"{directory} is not a saved composition (needs config.json and {WEIGHTS_NAME})")
        config = CALMConfig.from_pretrained(directory)
        if not isinstance(config.anchor, dict) or not isinstance(config.augmenting, list) or not config.augmenting:
            raise CompositionLoadError(f"{config_file} names no anchor or no augmenting models: not a saved composition")
        if anchor is None:
            anchor = load_causal_lm(_source(config.anchor, "anchor"), config.anchor.get("gguf_file"), **base_kwargs)
        if augmenting is None:
            augmenting = [
                load_causal_lm(_source(record, f"augmenting model {i}"), record.get("gguf_file"), **base_kwargs)
                for i, record in enumerate(config.augmenting)
            ]
        augmenting = [augmenting] if isinstance(augmenting, PreTrainedModel) else list(augmenting)
        _check_bases(config, anchor, augmenting, directory)
        if config.cross_tokenizer:
            processor = _processor_for(config, processor, directory)
        model = cls(config, anchor, augmenting, processor=processor)
        model.load_composition_state(load_file(directory / WEIGHTS_NAME))
        return model.eval()  # as transformers' from_pretrained: a loaded model is ready for inference (no dropout)

    def load_composition_state(self, state: dict[str, torch.Tensor]):
        expected = self.composition_state_dict()
        missing = sorted(set(expected) - set(state))
        unexpected = sorted(set(state) - set(expected))
        mismatched = [
            f"{k}: saved {tuple(state[k].shape)}, model {tuple(expected[k].shape)}"
            for k in expected
            if k in state and state[k].shape != expected[k].shape
        ]
        if missing or unexpected or mismatched:
            raise CompositionLoadError(
                "saved composition parameters do not fit this composition: "
                + "; ".join(
                    part
                    for part in (
                        f"missing {missing[:4]}" if missing else "",
                        f"unexpected {unexpected[:4]}" if unexpected else "",
                        f"shape mismatch {mismatched[:4]}" if mismatched else "",
                    )
                    if part
                )
            )
        self.bridges.load_state_dict({k[len("bridges.") :]: v for k, v in state.items()}, strict=True)
