"""World tokenizers: built (characters, BPE learnt on the world's data), pretrained ones read as they are or
restricted to the ids a world's text uses, saved and loaded again with their vocabulary map.

Either (`tokenizer: {characters: true}`) a character-level Hugging Face tokenizer (one token per character, digits
included) over the world's vocabulary, or (`tokenizer: {pretrained: <dir | hub id | pkg:...>, gguf_file: ...}`) a
pretrained model's tokenizer, saved in place so that models trained from scratch in this world share it with that
model. Encoding adds <bos> in front; training appends <eos> to targets.

A pretrained byte-level BPE tokenizer can be restricted to the ids the world's text uses (`tokenizer: {pretrained:
..., restrict: {splits: null | [<split>, ...]}}`, restrict_tokenizer): a model trained from scratch at d=128..256
would otherwise spend most of its compute in a 150k-row output head for ids its data never holds. The compact
tokenizer encodes the world's text exactly as the original does (ids renumbered), still encodes any other text (in
smaller kept pieces), and `vocabulary_map.json` beside it says which original id each compact id is, so that a
pretrained `init` model is cut to the same rows (pipeline/composition/vocabulary.py).

A model may read a pretrained tokenizer of its own instead (`worlds.<w>.models.<m>.tokenizer: {pretrained, gguf_file}`,
model_tokenizer; its training stage loads it and saves it beside the model): pipeline/training/kinds.py composes
such a model with an anchor on another tokenizer as a cross-tokenizer composition.
"""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io import read_jsonl
from pipeline.layout import data_dir, split_file
from pipeline.worlds import get_world

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]


def build_tokenizer(chars: list[str]):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for c in chars:
        if len(c) != 1:
            raise PipelineError(f"vocabulary entries must be single characters, got {c!r}")
        vocab.setdefault(c, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="left",  # generation pads left; the training collator pads itself
        clean_up_tokenization_spaces=False,
    )


def train_bpe_tokenizer(texts, chars: list[str], vocab_size: int):
    """A byte-pair-encoding tokenizer learnt on `texts` over the world's characters (no <unk> for them): digits
    stay one token each (numbers read digit by digit, as the character tokenizer does), spaces are kept as a
    word-start mark, so decoding gives back the text exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never"),
        pre_tokenizers.Digits(individual_digits=True),
    ])
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="never")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=sorted(set(chars) | {"\u2581"}), limit_alphabet=len(chars) + 1)
    tok.train_from_iterator(texts, trainer=trainer)
    bos = tok.token_to_id("<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>", padding_side="left", clean_up_tokenization_spaces=False)


# a restricted tokenizer's map: {"source", "original_vocab_size", "kept_ids": [original id of compact id 0, 1, ...]}
VOCABULARY_MAP = "vocabulary_map.json"


def load_tokenizer(path: str | Path):
    """A saved world tokenizer; a restricted one carries its map as `.vocabulary_map` (else None), so that whoever
    loads an `init` model for this world can cut the model to the same ids."""
    from transformers import AutoTokenizer

    path = Path(path)
    if not (path / "tokenizer.json").exists():
        raise PipelineError(f"missing upstream output {path}: run its stage first (dvc repro)")
    tok = AutoTokenizer.from_pretrained(str(path))
    tok.vocabulary_map = json.loads((path / VOCABULARY_MAP).read_text()) if (path / VOCABULARY_MAP).exists() else None
    return tok


def save_tokenizer(tok, directory: str | Path) -> None:
    """save_pretrained, and the vocabulary map of a restricted tokenizer beside it."""
    tok.save_pretrained(str(directory))
    if getattr(tok, "vocabulary_map", None):
        (Path(directory) / VOCABULARY_MAP).write_text(json.dumps(tok.vocabulary_map) + "\n")


def _byte_level_bpe(spec: dict, source: str) -> None:
    """Restriction keeps the 256 byte tokens so that any text still encodes: only a byte-level BPE has them."""
    def has_byte_level(node) -> bool:
        return bool(node) and (node.get("type") == "ByteLevel"
                               or any(map(has_byte_level, node.get("pretokenizers") or [])))

    model = spec["model"]
    if model.get("type") != "BPE" or not has_byte_level(spec.get("pre_tokenizer")) \
            or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        raise PipelineError(f"tokenizer.restrict: {source!r} is not a byte-level BPE tokenizer (model "
                            f"{model.get('type')}); only those can be restricted")


def _merge_pair(merge) -> tuple[str, str]:
    """tokenizers writes merges as ["a", "b"] pairs (older files: "a b" strings)."""
    return tuple(merge) if isinstance(merge, list) else tuple(merge.split(" ", 1))


def _used_ids(backend, texts, batch: int = 4096) -> set[int]:
    used, chunk = set(), []
    for text in texts:
        chunk.append(text)
        if len(chunk) == batch:
            used.update(i for e in backend.encode_batch(chunk, add_special_tokens=False) for i in e.ids)
            chunk = []
    used.update(i for e in backend.encode_batch(chunk, add_special_tokens=False) for i in e.ids)
    return used


def kept_token_ids(tokenizer, spec: dict, texts) -> list[int]:
    """Sorted original ids to keep: every id the texts encode to, every special and added token, every byte token,
    and, recursively, both parts of every merge that makes a kept token. With every merge that builds a kept
    token kept, BPE on the kept merges applies the very merges the original applies to these texts (it always
    takes the lowest-ranked applicable merge, and the one the original takes is among the kept), so their
    encoding does not change; other text falls back to the pieces that remain, down to bytes."""
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = spec["model"]["vocab"]
    kept = _used_ids(tokenizer.backend_tokenizer, texts)
    kept |= {a["id"] for a in spec["added_tokens"]} | set(tokenizer.all_special_ids)
    kept |= {vocab[c] for c in ByteLevel.alphabet() if c in vocab}
    makers: dict[str, list[tuple[str, str]]] = {}
    for merge in spec["model"]["merges"]:
        a, b = _merge_pair(merge)
        makers.setdefault(a + b, []).append((a, b))
    token = {i: t for t, i in vocab.items()}
    todo = [token[i] for i in kept if i in token]
    while todo:
        for part in (p for pair in makers.get(todo.pop(), ()) for p in pair):
            if vocab[part] not in kept:
                kept.add(vocab[part])
                todo.append(part)
    return sorted(kept)


def _renumbered_post_processor(node, new_id: dict[int, int]):
    """The post-processor with the ids of the special tokens it inserts renumbered."""
    if node is None or node["type"] == "ByteLevel":
        return node
    if node["type"] == "Sequence":
        return dict(node, processors=[_renumbered_post_processor(p, new_id) for p in node["processors"]])
    if node["type"] == "TemplateProcessing":
        return dict(node, special_tokens={k: dict(v, ids=[new_id[i] for i in v["ids"]])
                                          for k, v in node["special_tokens"].items()})
    if node["type"] in ("BertProcessing", "RobertaProcessing"):
        return dict(node, sep=[node["sep"][0], new_id[node["sep"][1]]], cls=[node["cls"][0], new_id[node["cls"][1]]])
    raise PipelineError(f"tokenizer.restrict: post-processor {node['type']} is not supported")


def compact_backend(spec: dict, kept: list[int]):
    """The `tokenizers` Tokenizer over the kept ids, renumbered in their original order (compact id = rank in
    `kept`): kept vocabulary, the merges among kept tokens (in their order), added tokens renumbered, the same
    normalizer, pre-tokenizer, decoder and post-processor."""
    from tokenizers import Tokenizer

    new_id = {old: new for new, old in enumerate(kept)}
    spec = json.loads(json.dumps(spec))  # a copy to edit
    model = spec["model"]
    model["vocab"] = {t: new_id[i] for t, i in model["vocab"].items() if i in new_id}
    model["merges"] = [m for m in model["merges"]
                       if all(p in model["vocab"] for p in (*_merge_pair(m), "".join(_merge_pair(m))))]
    spec["added_tokens"] = [dict(a, id=new_id[a["id"]]) for a in spec["added_tokens"]]
    spec["post_processor"] = _renumbered_post_processor(spec.get("post_processor"), new_id)
    if spec.get("padding"):
        spec["padding"]["pad_id"] = new_id[spec["padding"]["pad_id"]]
    return Tokenizer.from_str(json.dumps(spec))


def restrict_tokenizer(tokenizer, texts, source: str):
    """`tokenizer` (a pretrained byte-level BPE) restricted to the ids `texts` need (kept_token_ids), as a
    transformers tokenizer with the same special tokens, carrying its `.vocabulary_map` (save with save_tokenizer)."""
    from transformers import PreTrainedTokenizerFast

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    _byte_level_bpe(spec, source)
    kept = kept_token_ids(tokenizer, spec, texts)
    backend = compact_backend(spec, kept)
    original = tokenizer.backend_tokenizer
    if any(backend.id_to_token(new) != original.id_to_token(old) for new, old in enumerate(kept)):
        raise RuntimeError("tokenizer.restrict: the compact tokenizer numbers its tokens otherwise than planned")
    compact = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token,
        unk_token=tokenizer.unk_token, pad_token=tokenizer.pad_token, padding_side=tokenizer.padding_side,
        model_max_length=tokenizer.model_max_length, chat_template=tokenizer.chat_template,
        clean_up_tokenization_spaces=tokenizer.clean_up_tokenization_spaces)
    compact.vocabulary_map = {"source": source, "original_vocab_size": len(tokenizer), "kept_ids": kept}
    return compact


def _world_texts(name: str, restrict) -> list[str]:
    """Every prompt, target and prompt + target of the world's splits `restrict` names (`splits: null`: all of
    data/<world>/*.jsonl): training encodes prompts and targets apart, generation continues a prompt."""
    if restrict is True:
        restrict = {}
    if not isinstance(restrict, dict) or set(restrict) - {"splits"}:
        raise PipelineError(f"worlds.{name}.tokenizer.restrict must be {{splits: null | [<split>, ...]}}, "
                            f"not {restrict!r}")
    splits = restrict.get("splits")
    data = data_dir(name)
    paths = [split_file(name, s) for s in splits] if splits else sorted(data.glob("*.jsonl"))
    if not paths:
        raise PipelineError(f"worlds.{name}.tokenizer.restrict: no {data}/*.jsonl: run build_data@{name} first (dvc repro)")
    rows = [r for p in paths for r in read_jsonl(p)]
    return [t for r in rows for t in (r["prompt"], r["target"], r["prompt"] + r["target"])]


def pretrained_tokenizer(tcfg: dict):
    """A pretrained model's tokenizer (`pretrained: <dir | hub id | pkg:...>`, `gguf_file`), padding on the left
    with <eos> where it has no pad token."""
    from pipeline.composition.base_models import load_tokenizer as load_pretrained_tokenizer

    tok = load_pretrained_tokenizer(tcfg["pretrained"], tcfg.get("gguf_file"))
    if tok.pad_token is None:  # batched generation and the training collator pad
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


MODEL_TOKENIZER_KEYS = ("pretrained", "gguf_file")


def model_tokenizer(tcfg, where: str):
    """The tokenizer a model declares for itself (`worlds.<w>.models.<m>.tokenizer: {pretrained, gguf_file}`) in place
    of the world's: a pretrained one, as is (a cross-tokenizer composition aligns it to its anchor's)."""
    if not isinstance(tcfg, dict) or not tcfg.get("pretrained") or set(tcfg) - set(MODEL_TOKENIZER_KEYS):
        raise PipelineError(f"{where} must be {{pretrained: <dir | hub id | pkg:...>, gguf_file: <file or null>}} "
                            f"(a model's own tokenizer is a pretrained one, used as is), not {tcfg!r}")
    return pretrained_tokenizer(tcfg)


def world_tokenizer(params: dict, name: str):
    """The tokenizer a world's conf asks for (not yet saved)."""
    tcfg = params["worlds"][name].get("tokenizer") or {}
    chosen = [k for k in ("characters", "bpe", "pretrained") if tcfg.get(k)]
    if len(chosen) > 1:
        raise PipelineError(f"worlds.{name}.tokenizer: give one of characters: true, bpe: {{...}} or pretrained: <model>, "
                            f"not {' and '.join(chosen)}")
    if tcfg.get("restrict") not in (None, False) and not tcfg.get("pretrained"):
        raise PipelineError(f"worlds.{name}.tokenizer.restrict applies to a pretrained tokenizer only")
    if tcfg.get("bpe"):  # learnt on the world's own training splits (data/<world>/, built before this stage)
        bcfg = tcfg["bpe"]
        world = get_world(params, name)
        splits = bcfg.get("splits") or []
        if not splits or not bcfg.get("vocab_size"):
            raise PipelineError(f"worlds.{name}.tokenizer.bpe needs vocab_size and splits (the training splits it learns from)")
        texts = (r["prompt"] + r["target"] for s in splits for r in read_jsonl(split_file(name, s)))
        return train_bpe_tokenizer(texts, world.vocabulary(params["worlds"][name]["data"]), int(bcfg["vocab_size"]))
    if tcfg.get("characters"):
        world = get_world(params, name)
        return build_tokenizer(world.vocabulary(params["worlds"][name]["data"]))
    if tcfg.get("pretrained"):
        tok = pretrained_tokenizer(tcfg)
        restrict = tcfg.get("restrict")
        if restrict not in (None, False):
            tok = restrict_tokenizer(tok, _world_texts(name, restrict), str(tcfg["pretrained"]))
            kept = len(tok.vocabulary_map["kept_ids"])
            print(f"tokenizer.restrict: kept {kept:,} of {tok.vocabulary_map['original_vocab_size']:,} ids")
        return tok
    raise PipelineError(f"worlds.{name}.tokenizer must say characters: true, bpe: {{vocab_size, splits}} or pretrained: <model>")
