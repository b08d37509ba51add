"""The checks a composition makes of what it is loaded or built with: its saved bases and tokenizers against the
models and processor given (`CompositionLoadError`), and a processor against the models' vocabularies."""
from __future__ import annotations

import warnings
from pathlib import Path

from transformers import PreTrainedModel

from pipeline.errors import UserError

from .alignment import CALMProcessor, tokenizer_record
from .base_models import describe, is_legacy_fingerprint, legacy_fingerprint, load_tokenizer
from .configuration_calm import CALMConfig, CompositionConfigError


class CompositionLoadError(UserError, RuntimeError):
    """A saved composition does not fit the base models or the files it is being loaded with."""


def _check_processor(processor, count: int):
    if processor is None:
        raise CompositionConfigError("this composition's models have different tokenizers: pass "
                                     "processor=CALMProcessor(anchor tokenizer, augmenting tokenizers)")
    if not isinstance(processor, CALMProcessor):
        raise CompositionConfigError(f"processor must be a CALMProcessor, not {type(processor).__name__}")
    if len(processor.augmenting) != count:
        raise CompositionConfigError(f"the processor has {len(processor.augmenting)} augmenting tokenizers for "
                                     f"{count} augmenting models")


def _check_vocabulary(role: str, tokenizer, vocab_size: int):
    if len(tokenizer) > vocab_size:
        raise CompositionConfigError(f"{role} has {vocab_size} embeddings but its tokenizer in the processor has "
                                     f"{len(tokenizer)} tokens: not that model's tokenizer")


def _processor_for(config: CALMConfig, processor: CALMProcessor | None, directory: Path) -> CALMProcessor:
    """The saved composition's tokenizers: `processor`, else those saved beside it, else those its records name;
    checked against the records."""
    records = [("anchor", config.anchor)] + [(f"augmenting model {i}", r) for i, r in enumerate(config.augmenting)]
    if processor is None and (directory / "anchor_tokenizer").is_dir():
        processor = CALMProcessor.from_pretrained(directory)
    if processor is None:
        tokenizers = []
        for role, record in records:
            saved = record.get("tokenizer") or {}
            if not saved.get("name_or_path"):
                raise CompositionLoadError(f"the saved composition does not say where its {role}'s tokenizer comes "
                                           "from: pass processor=CALMProcessor(...) to from_pretrained")
            tokenizers.append(load_tokenizer(saved["name_or_path"], saved.get("gguf_file")))
        processor = CALMProcessor(tokenizers[0], tokenizers[1:])
    actual = [tokenizer_record(processor.anchor_tokenizer)] + [tokenizer_record(t) for t in processor.augmenting_tokenizers]
    if len(actual) != len(records):
        raise CompositionLoadError(f"the composition has {len(records) - 1} augmenting models; the processor has "
                                   f"{len(actual) - 1} augmenting tokenizers")
    for (role, record), now in zip(records, actual):
        saved = record.get("tokenizer") or {}
        if saved.get("digest") != now["digest"]:
            raise CompositionLoadError(
                f"{role}'s tokenizer is not the one this composition was trained with ({saved.get('name_or_path')}, "
                f"{saved.get('vocab_size')} tokens, digest {saved.get('digest')}; given: {now['vocab_size']} tokens, "
                f"digest {now['digest']})"
            )
    return processor


def _source(record: dict, role: str) -> str:
    if not record.get("name_or_path"):
        raise CompositionLoadError(
            f"the saved composition does not name its {role} (it was built from an in-memory model): "
            f"pass it to from_pretrained({role.split()[0]}=...)"
        )
    return record["name_or_path"]


def _check_bases(config: CALMConfig, anchor: PreTrainedModel, augmenting: list[PreTrainedModel], directory=None):
    """Refuse bases other than those the composition was trained with, naming what differs.

    A record with a first-scheme fingerprint (a bare digest of the input embeddings, before "w2:") is checked with
    that scheme and, if it matches, upgraded in `config` to the current one, with a warning: only the embeddings were
    compared. Saving the composition again writes the current fingerprints.
    """
    if len(augmenting) != len(config.augmenting):
        raise CompositionLoadError(
            f"the composition was trained with {len(config.augmenting)} augmenting models; {len(augmenting)} given"
        )
    fields = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    pairs = [("anchor", config.anchor, anchor)] + [
        (f"augmenting model {i}", record, model) for i, (record, model) in enumerate(zip(config.augmenting, augmenting))
    ]
    legacy = []
    for role, record, model in pairs:
        actual = describe(model)
        differences = [f"{f} {record.get(f)!r} != {actual[f]!r}" for f in fields if record.get(f) != actual[f]]
        saved = record.get("fingerprint")
        if is_legacy_fingerprint(saved):
            if not differences and saved != (now := legacy_fingerprint(model)):
                differences.append(
                    f"fingerprint {saved!r} != {now!r} (saved with an older fingerprint scheme: input embeddings only)"
                )
        elif saved != actual["fingerprint"]:
            differences.append(
                f"fingerprint {saved!r} != {actual['fingerprint']!r} (other weights, or the same loaded in another dtype)"
            )
        if differences:
            raise CompositionLoadError(
                f"{role} does not match the one this composition was trained with "
                f"({record.get('name_or_path')}): " + ", ".join(differences)
            )
        if is_legacy_fingerprint(saved):
            legacy.append(role)
            record["fingerprint"] = actual["fingerprint"]
    if legacy:
        warnings.warn(
            f"the composition{f' in {directory}' if directory else ''} was saved with an older fingerprint scheme "
            f"(input embeddings only): only the embeddings of its {' and '.join(legacy)} were checked against the "
            "bases it was trained with; save it again (save_pretrained) to record fingerprints of all weights",
            stacklevel=3,
        )
