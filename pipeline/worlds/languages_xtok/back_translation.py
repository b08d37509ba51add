"""A D_C by back-translation (`method: back_translation` of a `worlds.languages_xtok.synthesized` set): English
sentences that no evaluation reads, each put into ONE of the languages by mA itself, paired with the English it
came from: real English targets, mA's own (imperfect) writing of the language as sources.

Why (docs/results-table2-xtok.md, "Back-translation"): trained on the UDHR's ~50 English paragraphs, every adapter
learns them by heart and answers FLORES sentences with them; a D_C of many English sentences, each seen once, leaves
reading what mA understood of the source as the way to lower the loss.

  English   sentences of GSM8K train questions (split at sentence ends, `sentence_chars` long), none from a
            question the world's english_replay or bpb_prose_test holds, `n` drawn with `seed`
  language  round robin over `languages`
  prompt    the world's FLORES prompt English -> language, 2-shot from its exemplar lines (no DEV or TEST line is
            read), greedy, stopped at the newline, at most ceil(2.5 x the English's mA tokens) + 8 new tokens
  kept      a non-empty answer that is not a copy of the English (chrF1 of the answer against the English below
            `keep.max_copy_chrf`), not a greedy loop (`degenerate`; `keep.drop_degenerate`), and that mA reads back: its own 2-shot
            translation of the answer into English scores sentence chrF1 >= `keep.min_roundtrip_chrf` against it
  row       the world's zero-shot D_C layout: the FLORES prompt language -> English with mA's answer as the
            source, target " <English>\\n"; the kept rows in an order drawn with `seed`
"""
from __future__ import annotations

import math
import random
import re
from pathlib import Path

SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
CHARACTER_RUN = re.compile(r"(.)\1{7,}")


def degenerate(text: str) -> bool:
    """A greedy loop: a word of 2+ characters 4 times or more, or one character 8 times in a row."""
    words = [w for w in text.split() if len(w) >= 2]
    return bool(CHARACTER_RUN.search(text)) or any(words.count(w) >= 4 for w in set(words))


def english_sentences(data_cfg: dict, world_data: Path, n: int, seed: int, min_chars: int, max_chars: int) -> list[str]:
    """n distinct sentences of GSM8K train questions that the world's English splits (replay, bits per byte) do
    not come from, drawn with seed."""
    from pipeline.benchmarks.data import read_benchmark_jsonl
    from pipeline.errors import PipelineError
    from pipeline.io import read_jsonl
    from pipeline.worlds.languages_xtok.splits import _gsm8k_train

    questions = list(dict.fromkeys(" ".join(r["question"].split()) for r in read_benchmark_jsonl(_gsm8k_train(data_cfg))))
    taken = {r["id"] for s in ("english_replay", "bpb_prose_test") for r in read_jsonl(world_data / f"{s}.jsonl")}
    free = [q for i, q in enumerate(questions) if f"gsm8k-train-question:{i}" not in taken]
    sentences = list(dict.fromkeys(s for q in free for s in SENTENCE_END.split(q) if min_chars <= len(s) <= max_chars))
    if n > len(sentences):
        raise PipelineError(f"back-translation: {n} sentences asked, {len(sentences)} of {min_chars}-{max_chars} "
                            "characters qualify")
    return random.Random(f"{seed}:back_translation").sample(sentences, n)


def verdict(candidate: dict, keep: dict) -> bool:
    """Whether a candidate becomes a row (the module docstring's `kept`)."""
    return (not candidate["empty"] and candidate["copy_chrf"] < float(keep["max_copy_chrf"])
            and not (candidate["degenerate"] and keep.get("drop_degenerate", True))
            and candidate["roundtrip_chrf"] >= float(keep["min_roundtrip_chrf"]))


def as_rows(candidates: list[dict], seed: int, task: str) -> list[dict]:
    """The kept candidates as D_C rows (zero-shot FLORES prompt, mA's sentence as the source, the real English as
    the target), in an order drawn with seed."""
    from pipeline.worlds.languages_xtok.splits import translation_prompt

    chosen = [c for c in candidates if c["kept"]]
    random.Random(seed).shuffle(chosen)
    return [{"prompt": translation_prompt(c["group"], c["source"], []), "target": f" {c['english']}\n",
             "group": c["group"], "id": f"bt-{c['group']}-{i}", "task": task} for i, c in enumerate(chosen)]


def back_translate(model, tokenizer, data_cfg: dict, world_data: Path, cfg: dict, progress=None) -> list[dict]:
    """Every candidate (dict: group, english, source, roundtrip, and the filters' figures and verdict), language by
    language. model/tokenizer: mA's, loaded; cfg: the synthesized set's conf."""
    from pipeline.benchmarks.data import load_flores
    from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES, flores_prompt
    from pipeline.benchmarks.metrics import load_metric
    from pipeline.generation import generate_texts
    from pipeline.worlds.languages_xtok.flores_lines import SHOT_LINES, TARGET
    from pipeline.worlds.languages_xtok.splits import _flores_dir, translation_prompt

    langs = list(cfg["languages"])
    lo, hi = cfg["sentence_chars"]
    english = english_sentences(data_cfg, world_data, int(cfg["n"]), int(cfg["seed"]), int(lo), int(hi))
    flores = {x: load_flores(x, local_dir=str(_flores_dir(data_cfg)), hub_id=None) for x in [TARGET, *langs]}
    jobs = [(english[k], langs[k % len(langs)]) for k in range(len(english))]
    chrf = load_metric("chrf")
    batch_size = int(cfg.get("batch_size", 8))

    def complete(prompts: list[str], budget: int) -> list[str]:
        return [a.strip() for a in generate_texts(model, tokenizer, prompts, max_new_tokens=budget, stop=["\n"],
                                                  batch_size=batch_size, progress=False)]

    def sentence_chrf(prediction: str, reference: str) -> float:
        return round(chrf.compute(predictions=[prediction], references=[reference])["chrf1"], 1)

    candidates = []
    for x in langs:   # one language at a time: one prompt prefix, one token budget per batch
        mine = sorted((e for e, lang in jobs if lang == x), key=len)
        to_x = [(flores[TARGET][i], flores[x][i]) for i in SHOT_LINES]
        to_english = [(flores[x][i], flores[TARGET][i]) for i in SHOT_LINES]
        for b in range(0, len(mine), batch_size):
            batch = mine[b:b + batch_size]
            budget = math.ceil(2.5 * max(len(tokenizer(e)["input_ids"]) for e in batch)) + 8
            answers = complete([flores_prompt(FLORES_LANGUAGE_NAMES[TARGET], FLORES_LANGUAGE_NAMES[x], to_x, e)
                                for e in batch], budget)
            back = complete([translation_prompt(x, a, to_english) for a in answers], budget)
            for e, a, r in zip(batch, answers, back):
                c = {"group": x, "english": e, "source": a, "roundtrip": r, "empty": not a,
                     "copy_chrf": sentence_chrf(a, e) if a else None, "degenerate": degenerate(a),
                     "roundtrip_chrf": sentence_chrf(r, e)}
                c["kept"] = verdict(c, cfg["keep"])
                candidates.append(c)
        if progress:
            progress(f"{x}: {sum(c['kept'] for c in candidates if c['group'] == x)} kept of {len(mine)}")
    return candidates


def dropped(candidates: list[dict], keep: dict) -> dict:
    """How many candidates each filter drops (a candidate may fail several)."""
    return {"empty": sum(c["empty"] for c in candidates),
            "degenerate": sum(c["degenerate"] for c in candidates),
            "copy": sum(1 for c in candidates if c["copy_chrf"] is not None and c["copy_chrf"] >= float(keep["max_copy_chrf"])),
            "roundtrip": sum(1 for c in candidates if c["roundtrip_chrf"] < float(keep["min_roundtrip_chrf"]))}
