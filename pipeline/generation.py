"""The one batched-generation interface: prompts in, completions out, for any HF-style model.

Works with anything that has `.generate()` like a transformers causal LM: a plain
AutoModelForCausalLM, a peft model, or the project's composed CALMForCausalLM. Batches are
left-padded; prompts are sorted by length so that a batch wastes little padding, and the
results come back in the caller's order. A row stops generating once its completion text
(the new tokens only, decoded) contains a stop sequence, and a batch stops once every row
has; the text is then cut at the earliest stop sequence. Matching on decoded completion
text (rather than transformers' token-level stop_strings, which also match across the
prompt boundary, e.g. a prompt ending in "\n" plus a first token "def" for "\ndef") makes
the early stop agree exactly with the cut.

An optional GenerationCache (JSONL) remembers completions by (model id, prompt,
settings), so a re-run or a re-scoring does not regenerate.

Under several processes (pipeline/distributed.py), `distribute=True` shares greedy generation between them:
the one-process batches (sorted by length, cut into batch_size) are dealt out whole, in contiguous runs, so every
batch is the very batch one process computes, and the completions are gathered back in the caller's order on
every process. Sampled generation (do_sample) draws from one seeded stream across batches, so it is not split:
every process generates it all, as one process does. Either way the main process alone writes the cache.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

import torch
from tqdm.auto import tqdm
from transformers import StoppingCriteria, StoppingCriteriaList

from pipeline.text import truncate_at_stop


class GenerationError(ValueError):
    """Bad arguments to generate_texts (one-line message)."""


class GenerationCache:
    """Completions on disk, one JSON object a line: {"key": ..., "completions": [...]}."""

    def __init__(self, path: str | Path, model_id: str):
        self.path = Path(path)
        self.model_id = model_id
        self.entries: dict[str, list[str]] = {}
        if self.path.exists():
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                        self.entries[entry["key"]] = entry["completions"]
                    except (json.JSONDecodeError, KeyError):
                        continue  # a line cut by an interrupted run: regenerate it

    def key(self, prompt: str, settings: dict) -> str:
        blob = json.dumps([self.model_id, prompt, settings], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, prompt: str, settings: dict) -> list[str] | None:
        return self.entries.get(self.key(prompt, settings))

    def put_many(self, pairs: list[tuple[str, list[str]]], settings: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            for prompt, completions in pairs:
                key = self.key(prompt, settings)
                self.entries[key] = completions
                f.write(json.dumps({"key": key, "completions": completions},
                                   ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


class _StopOnCompletionText(StoppingCriteria):
    """Per row: done once the decoded new tokens contain a stop sequence."""

    def __init__(self, tokenizer, stop: Sequence[str], prompt_length: int):
        self.tokenizer = tokenizer
        self.stop = list(stop)
        self.prompt_length = prompt_length
        # A stop sequence of n characters spans at most n tokens (plus a few for tokens
        # that decode to nothing, and bytes of a character split over tokens).
        self.window = max(len(s) for s in self.stop) + 4

    def __call__(self, input_ids, scores, **kwargs):
        new_tokens = input_ids[:, self.prompt_length:]
        tails = self.tokenizer.batch_decode(new_tokens[:, -self.window:],
                                            skip_special_tokens=True)
        done = [any(s in tail for s in self.stop) for tail in tails]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def _model_device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return torch.device("cpu")


@torch.no_grad()
def generate_texts(model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int,
                   stop: Sequence[str] = (), batch_size: int = 8, do_sample: bool = False,
                   temperature: float = 1.0, top_p: float = 1.0,
                   num_return_sequences: int = 1, seed: int | None = 0, num_beams: int = 1,
                   cache: GenerationCache | None = None, progress: bool = True,
                   desc: str = "generating", distribute: bool = False) -> list[str] | list[list[str]]:
    """Complete each prompt; returns one string per prompt, or, when
    num_return_sequences > 1, a list of that many strings per prompt.

    Greedy by default; num_beams > 1: beam search (the best beam's text). Completions exclude
    the prompt and are cut at the earliest stop sequence (the stop sequence itself is not kept).
    """
    if max_new_tokens < 1:
        raise GenerationError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if batch_size < 1:
        raise GenerationError(f"batch_size must be >= 1, got {batch_size}")
    if num_return_sequences < 1:
        raise GenerationError(f"num_return_sequences must be >= 1, got {num_return_sequences}")
    if num_beams < 1:
        raise GenerationError(f"num_beams must be >= 1, got {num_beams}")
    if num_beams > 1 and do_sample:
        raise GenerationError("num_beams > 1 is beam search: it takes do_sample=False")
    if num_return_sequences > 1 and not do_sample:
        raise GenerationError("num_return_sequences > 1 needs do_sample=True "
                              "(greedy decoding returns the same text every time)")
    if isinstance(prompts, str):
        raise GenerationError("prompts must be a list of strings, not one string")
    stop = [s for s in stop if s]
    settings = {"max_new_tokens": max_new_tokens, "stop": stop, "do_sample": do_sample,
                "temperature": temperature if do_sample else None,
                "top_p": top_p if do_sample else None,
                "num_return_sequences": num_return_sequences,
                "seed": seed if do_sample else None}
    if num_beams > 1:  # only then: every cache entry made before beam search existed keeps its key
        settings["num_beams"] = num_beams

    results: list[list[str] | None] = [None] * len(prompts)
    todo = []
    for index, prompt in enumerate(prompts):
        cached = cache.get(prompt, settings) if cache is not None else None
        if cached is not None:
            results[index] = cached
        else:
            todo.append(index)

    from pipeline import distributed

    several = distribute and distributed.world_size() > 1
    shared = several and not do_sample  # split between the processes (sampled: each generates it all)
    writes_cache = cache is not None and (not several or distributed.is_main())  # one writer of the cache file
    if todo:
        if tokenizer.pad_token_id is None:  # many causal LMs have no pad token
            tokenizer.pad_token = tokenizer.eos_token
        lengths = {i: len(tokenizer(prompts[i], add_special_tokens=True)["input_ids"])
                   for i in todo}
        todo.sort(key=lambda i: -lengths[i])  # longest first: memory trouble shows at once
        everything = todo
        if shared:  # this process's contiguous run of the one-process batches
            starts = list(range(0, len(todo), batch_size))
            mine = distributed.shard(len(starts))
            todo = [i for b in mine for i in todo[starts[b]:starts[b] + batch_size]]
        device = _model_device(model)
        if do_sample and seed is not None:
            torch.manual_seed(seed)
        original_padding_side = tokenizer.padding_side
        tokenizer.padding_side = "left"
        try:
            with tqdm(total=len(todo), desc=desc, disable=not progress, unit="prompt") as bar:
                for start in range(0, len(todo), batch_size):
                    batch = todo[start:start + batch_size]
                    completions = _generate_batch(
                        model, tokenizer, [prompts[i] for i in batch], device,
                        max_new_tokens=max_new_tokens, stop=stop, do_sample=do_sample,
                        temperature=temperature, top_p=top_p,
                        num_return_sequences=num_return_sequences, num_beams=num_beams)
                    for index, texts in zip(batch, completions):
                        results[index] = texts
                    if writes_cache and not shared:
                        cache.put_many([(prompts[i], results[i]) for i in batch], settings)
                    bar.update(len(batch))
        finally:
            tokenizer.padding_side = original_padding_side
        if shared:
            for part in distributed.gather_objects({i: results[i] for i in todo}):
                for i, texts in part.items():
                    results[i] = texts
            if writes_cache:
                cache.put_many([(prompts[i], results[i]) for i in everything], settings)

    if num_return_sequences == 1:
        return [texts[0] for texts in results]
    return results


def _generate_batch(model, tokenizer, prompts, device, *, max_new_tokens, stop, do_sample,
                    temperature, top_p, num_return_sequences, num_beams=1) -> list[list[str]]:
    encoded = tokenizer(list(prompts), return_tensors="pt", padding=True)
    encoded = {k: v.to(device) for k, v in encoded.items() if k in ("input_ids",
                                                                    "attention_mask")}
    options = dict(max_new_tokens=max_new_tokens, do_sample=do_sample,
                   num_return_sequences=num_return_sequences,
                   pad_token_id=tokenizer.pad_token_id)
    if do_sample:
        options.update(temperature=temperature, top_p=top_p)
    else:  # say so explicitly: a model's generation_config may default to sampling
        options.update(temperature=None, top_p=None, top_k=None)
    if num_beams > 1:
        options["num_beams"] = num_beams
    if stop:
        options["stopping_criteria"] = StoppingCriteriaList(
            [_StopOnCompletionText(tokenizer, stop, encoded["input_ids"].shape[1])])
    output = model.generate(**encoded, **options)
    sequences = output.sequences if hasattr(output, "sequences") else output
    new_tokens = sequences[:, encoded["input_ids"].shape[1]:]
    texts = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
    texts = [truncate_at_stop(text, stop) for text in texts]
    return [texts[i:i + num_return_sequences]
            for i in range(0, len(texts), num_return_sequences)]


def generate_and_score(model, tokenizer, prompts: Sequence[str], score, *, num_return_sequences: int = 1,
                       strip_eos: bool = False, **generation) -> tuple[dict, list[dict]] | None:
    """The one evaluation runner: complete every prompt (generate_texts, with its `generation` settings), then
    score the completions. -> score(completions), i.e. (metrics, one record per prompt), where completions holds
    num_return_sequences texts per prompt, in the prompts' order. The world evaluation sets (pipeline/evaluate.py)
    and the benchmarks (pipeline/benchmarks/run.py) both run through here.

    strip_eos: remove the tokenizer's end-of-sequence text from every completion (a world's model may emit it
    before its stop sequence). With `distribute=True` only the main process scores; the others return None."""
    generated = generate_texts(model, tokenizer, prompts, num_return_sequences=num_return_sequences, **generation)
    from pipeline import distributed

    if generation.get("distribute") and not distributed.is_main():  # the main process scores and writes
        return None
    completions = [[text] if num_return_sequences == 1 else text for text in generated]
    if strip_eos and tokenizer.eos_token:
        completions = [[text.replace(tokenizer.eos_token, "") for text in samples] for samples in completions]
    return score(completions)
