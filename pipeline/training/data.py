"""Training data: a world's prompt/target rows -> a tokenised `datasets.Dataset`, cached on disk.

Labels are -100 on the prompt (loss on the answer only); a row with an empty prompt is plain text (loss on
every token but <bos>). Tokenising is `datasets.map` (batched) into an Arrow file keyed by the rows, the
tokenizer and the options, so a rerun of a stage (a resume, a new learning rate) does not tokenise again.
A cross-tokenizer composition's rows also carry each mA's tokens of the same text and the alignment
(`processor=`, a CALMProcessor: columns augmenting_input_ids_<a>, augmenting_visible_<a>), cached alike.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io import read_jsonl
from pipeline.layout import TOKENIZED_CACHE, data_dir, split_file


def world_rows(world: str, stems: list[str]) -> list[dict]:
    return [r for s in stems for r in read_jsonl(split_file(world, s))]


def data_stems(cfg: dict) -> list[str]:
    data = cfg.get("data")
    if not data:
        raise PipelineError("a trained model needs `data`: the world's split(s) it trains on")
    return data if isinstance(data, list) else [data]


def _tokenize_batch(batch: dict, tokenizer, loss_until: str | None) -> dict:
    eos = tokenizer.eos_token_id
    prompts = tokenizer(batch["prompt"])["input_ids"]  # with <bos>
    targets = tokenizer(batch["target"], add_special_tokens=False)["input_ids"]
    out = {"input_ids": [], "labels": [], "n_prompt": []}
    for prompt_text, target_text, p, t in zip(batch["prompt"], batch["target"], prompts, targets):
        ids = p + t + [eos]
        n_prompt = len(p) if prompt_text else 1  # plain text: predict all but <bos>
        labels = [-100] * n_prompt + ids[n_prompt:]
        if loss_until and loss_until in target_text:
            head = target_text[: target_text.index(loss_until) + len(loss_until)]
            n_head = len(tokenizer(head, add_special_tokens=False)["input_ids"])
            labels = labels[: len(p) + n_head] + [-100] * (len(ids) - len(p) - n_head)
        out["input_ids"].append(ids)
        out["labels"].append(labels)
        out["n_prompt"].append(len(p))
    return out


def _tokenizer_digest(tokenizer) -> str:
    return hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode() if hasattr(tokenizer, "backend_tokenizer")
                          else repr(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()[:16]


def _align_batch(batch: dict, processor) -> dict:
    out = {}
    for a, alignment in enumerate(processor.align(batch["input_ids"])):
        out[f"augmenting_input_ids_{a}"] = alignment.ids
        out[f"augmenting_visible_{a}"] = alignment.visible
    return out


def supervised_dataset(rows: list[dict], tokenizer, loss_until: str | None = None, cache: Path | None = TOKENIZED_CACHE,
                       processor=None):
    """prompt/target rows -> Dataset(input_ids, labels, n_prompt); same rows, same order.

    processor: a CALMProcessor whose anchor tokenizer is `tokenizer` (a cross-tokenizer composition): each row also
    gets, per mA a, augmenting_input_ids_<a> (mA's tokens of the row's text) and augmenting_visible_<a> (per anchor
    token, how many of them it may read); `Collator(augmenting_pad_ids=processor.augmenting_pad_ids)` pads them.

    loss_until: if set, the loss covers each target only up to and including the first occurrence of this
    string (rows without it keep their whole target): e.g. "=" trains a scratchpad target "12+34=64" on "12+34="."""
    import functools

    import pyarrow as pa
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    if not rows:
        raise PipelineError("no training rows: the world's split is empty")
    digest = hashlib.sha256()
    for r in rows:
        digest.update(json.dumps([r["prompt"], r["target"]]).encode())
    key = hashlib.sha256(f"{digest.hexdigest()}|{_tokenizer_digest(tokenizer)}|{loss_until}".encode()).hexdigest()[:20]
    if processor is not None:
        if _tokenizer_digest(processor.anchor_tokenizer) != _tokenizer_digest(tokenizer):
            raise PipelineError("supervised_dataset: the processor's anchor tokenizer is not `tokenizer`")
        mixed = "|".join(_tokenizer_digest(t) for t in processor.augmenting_tokenizers)
        key = hashlib.sha256(f"{key}|aligned|{mixed}".encode()).hexdigest()[:20]
    # our own fingerprint (datasets would otherwise dill-hash the table's state, which fails on some Python/pyarrow pairs)
    table = pa.table({"prompt": [r["prompt"] for r in rows], "target": [r["target"] for r in rows]})
    ds = Dataset(table, fingerprint=f"rows-{key}")
    kwargs = {}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        kwargs = {"cache_file_name": str(cache / f"{key}.arrow"), "load_from_cache_file": True}
    tokenize = functools.partial(_tokenize_batch, tokenizer=tokenizer, loss_until=loss_until)
    if processor is not None:  # one pass: the alignment reads the ids the anchor's tokenization just made
        tokenize = functools.partial(_tokenize_and_align, tokenize=tokenize, processor=processor)
    return ds.map(tokenize, batched=True, batch_size=1000, remove_columns=["prompt", "target"], new_fingerprint=key,
                  **kwargs)


def _tokenize_and_align(batch: dict, tokenize, processor) -> dict:
    out = tokenize(batch)
    return {**out, **_align_batch(out, processor)}


class Collator:
    """Right-pads input_ids/labels; with `augmenting_prompt` also passes the prompt alone (left-aligned) as
    augmenting_input_ids, for encoder-mode compositions. (transformers' DataCollatorForSeq2Seq pads on the
    tokenizer's side, which is the left for generation: that would shift absolute positions in training.)
    With `augmenting_pad_ids` (one per mA: a cross-tokenizer composition's `processor.augmenting_pad_ids`) it also
    right-pads each mA's own tokens and passes augmenting_input_ids, augmenting_attention_mask and augmenting_visible
    (tensors for one mA, lists for several), as supervised_dataset(..., processor=) made them."""

    def __init__(self, pad_id: int, augmenting_prompt: bool = False, augmenting_pad_ids: list[int] | None = None):
        self.pad_id = pad_id
        self.augmenting_prompt = augmenting_prompt
        self.augmenting_pad_ids = augmenting_pad_ids

    def __call__(self, batch):
        import torch

        n = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), n), self.pad_id, dtype=torch.long)
        labels = torch.full((len(batch), n), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), n), dtype=torch.long)
        for i, b in enumerate(batch):
            L = len(b["input_ids"])
            ids[i, :L] = torch.tensor(b["input_ids"])
            labels[i, :L] = torch.tensor(b["labels"])
            mask[i, :L] = 1
        out = {"input_ids": ids, "attention_mask": mask, "labels": labels}
        if self.augmenting_prompt:
            m = max(b["n_prompt"] for b in batch)
            aids = torch.full((len(batch), m), self.pad_id, dtype=torch.long)
            amask = torch.zeros((len(batch), m), dtype=torch.long)
            for i, b in enumerate(batch):
                L = b["n_prompt"]
                aids[i, m - L :] = torch.tensor(b["input_ids"][:L])
                amask[i, m - L :] = 1
            out["augmenting_input_ids"] = aids
            out["augmenting_attention_mask"] = amask
        if self.augmenting_pad_ids is not None:
            from pipeline.composition.alignment import Alignment

            parts = [
                Alignment([b[f"augmenting_input_ids_{a}"] for b in batch], [b[f"augmenting_visible_{a}"] for b in batch],
                          []).tensors(pad, n)
                for a, pad in enumerate(self.augmenting_pad_ids)
            ]
            for k, name in enumerate(("augmenting_input_ids", "augmenting_attention_mask", "augmenting_visible")):
                out[name] = parts[0][k] if len(parts) == 1 else [p[k] for p in parts]
        return out


def training_rows(params: dict, world: str, name: str) -> list[dict]:
    """The prompt/target rows model <name> trains on, prefixes included (see prefix_fraction)."""
    from pipeline.worlds import get_world

    cfg = params["worlds"][world]["models"][name]
    rows = world_rows(world, data_stems(cfg))
    frac = float(cfg.get("prefix_fraction") or 0.0)
    if frac > 0:  # shift a fraction of the prompts behind a value-free prefix the world provides
        module = get_world(params, world)
        if not hasattr(module, "random_prefixes"):
            raise PipelineError(f"model {world}/{name}: prefix_fraction needs the world module to define random_prefixes")
        k = int(round(frac * len(rows)))
        prefixes = module.random_prefixes(params["worlds"][world]["data"], k, params["seed"] + 1, data_dir(world),
                                          pool=cfg.get("prefix_pool"))
        rows = [dict(r, prompt=p + r["prompt"]) for r, p in zip(rows[:k], prefixes)] + rows[k:]
    return rows


def anchor_replay_setting(cfg: dict) -> tuple[float, bool]:
    """`anchor_replay` as (fraction, fresh): a number is the fraction of the mix with a fixed set of replayed rows;
    `{fraction: f, fresh: true}` draws the replayed rows anew across the whole run (anchor_replay_plan)."""
    value = cfg.get("anchor_replay") or 0.0
    if isinstance(value, dict):
        unknown = set(value) - {"fraction", "fresh"}
        if unknown or "fraction" not in value:
            raise PipelineError(f"anchor_replay must be a fraction or {{fraction: f, fresh: true|false}}, got {dict(value)}")
        frac, fresh = value["fraction"], bool(value.get("fresh", False))
    else:
        frac, fresh = value, False
    try:
        frac = float(frac)
    except (TypeError, ValueError):
        raise PipelineError(f"anchor_replay's fraction must be a number in [0, 1), got {frac!r}") from None
    if not 0 <= frac < 1:
        raise PipelineError(f"anchor_replay must be in [0, 1), got {frac}")
    return frac, fresh


def anchor_replay_plan(cfg: dict, n_composition_rows: int) -> tuple[int, int]:
    """(replayed rows, D_C repeats) for a mix in which the anchor's rows are `fraction` of the rows.

    Fixed (a number): D_C once and fraction/(1 - fraction) * |D_C| replayed rows, re-seen every epoch. A small D_C
    (the paper's 5% of mA's data) is then seen for many epochs with the same few replayed rows, which the anchor
    fits already and which teach the composition little about the anchor's inputs in general. Fresh: D_C repeated
    as often as the run's steps * batch_size draws reach it, and as many replayed rows as then keep the fraction,
    each a distinct anchor row while the anchor's data lasts: a run draws every replayed row about once."""
    frac, fresh = anchor_replay_setting(cfg)
    if frac <= 0 or n_composition_rows <= 0:
        return 0, 1
    repeats = 1
    if fresh:
        train = cfg.get("train") or {}
        draws = int(train.get("steps") or 0) * int(train.get("batch_size") or 0)
        repeats = max(1, math.ceil(draws * (1 - frac) / n_composition_rows))
    return int(round(frac / (1 - frac) * n_composition_rows * repeats)), repeats


def anchor_replay_rows(params: dict, world: str, cfg: dict, n_composition_rows: int) -> list[dict]:
    """Rows of the anchor's own training data mixed into D_C (`anchor_replay`: their fraction of the mix).

    They show the composition positions where mA has nothing to add (the anchor's own task), which keeps the
    anchor's skill intact (paper Table 1: CALM keeps mB's NUM-MATH). Seeded: same seed, same rows. Fixed: drawn
    with replacement; fresh: without, going through the anchor's rows again in a new order when they run out."""
    k, _ = anchor_replay_plan(cfg, n_composition_rows)
    if k == 0:
        return []
    pool = training_rows(params, world, cfg["anchor"])
    rng = random.Random(params["seed"] + 2)
    if not anchor_replay_setting(cfg)[1]:
        return [pool[rng.randrange(len(pool))] for _ in range(k)]
    order: list[int] = []
    while len(order) < k:
        order += rng.sample(range(len(pool)), len(pool))
    return [pool[i] for i in order[:k]]


def composition_mix(params: dict, world: str, cfg: dict, rows: list[dict], tokenizer, loss_until: str | None = None,
                    processor=None):
    """D_C (`rows`, tokenised with loss_until) mixed with the anchor's replayed rows as anchor_replay_plan says:
    (dataset, number of replayed rows, D_C repeats). `cfg["anchor"]` names the anchor whose rows are replayed.
    processor: a cross-tokenizer composition's CALMProcessor (every row, replayed ones too, aligned for each mA)."""
    from torch.utils.data import ConcatDataset  # (datasets.concatenate_datasets would dill-hash the features)

    dataset = supervised_dataset(rows, tokenizer, loss_until=loss_until, processor=processor)
    replay = anchor_replay_rows(params, world, cfg, len(rows))
    if not replay:
        return dataset, 0, 1
    _, repeats = anchor_replay_plan(cfg, len(rows))
    # loss_until applies to D_C's targets only; replayed rows keep their whole target
    return (ConcatDataset([dataset] * repeats + [supervised_dataset(replay, tokenizer, processor=processor)]),
            len(replay), repeats)


def mix_description(n_rows: int, repeats: int, n_replay: int) -> str:
    """A composition mix for the training log: "1300 training rows x 15 + 7000 anchor replay rows"."""
    return (f"{n_rows} training rows" + (f" x {repeats}" if repeats > 1 else "")
            + (f" + {n_replay} anchor replay rows" if n_replay else ""))
