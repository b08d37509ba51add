"""`build(cfg, out_dir, seed)`: the language world's cfg checked, its splits drawn, rendered and written, and its
summary."""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError
from pipeline.io import atomic_write_json, atomic_write_jsonl
from pipeline.worlds.languages.language_set import language_table, make_languages, vocabulary
from pipeline.worlds.languages.sources import _inputs, normalise
from pipeline.worlds.languages.tasks import (WORLD, all_annotation_expressions, math_answer, math_items, math_prompt,
                                             math_question, random_math_item, segments, translation_prompt)
from pipeline.worlds.languages.synthetic_language import Language, render, unrender


# ---------------------------------------------------------------- building


def _split_rng(seed: int, *keys) -> np.random.Generator:
    return np.random.default_rng([seed] + [zlib.crc32(str(k).encode()) for k in keys])


def _sample(rng, items: list, n: int) -> list:
    if n > len(items):
        raise PipelineError(f"languages world: asked for {n} items from a pool of {len(items)}; lower the size")
    return [items[i] for i in sorted(rng.choice(len(items), size=n, replace=False))]


def _check(cfg: dict) -> None:
    table = language_table(cfg)
    if not any(r == "lrl" for _, r, _ in table) or not any(r == "hrl" for _, r, _ in table):
        raise PipelineError("languages world: needs at least one LRL and one HRL")
    math_answer({"a": 1, "op": "+", "b": 1, "value": 2}, cfg["math"].get("answer_format", "number"))  # one clear error
    c = cfg["composition"]
    if not 0 < float(c["fraction"]) <= 1:
        raise PipelineError(f"composition.fraction must be in (0, 1], got {c['fraction']}")
    if not 0 <= float(c["task_fraction"]) <= 1:
        raise PipelineError(f"composition.task_fraction must be in [0, 1], got {c['task_fraction']}")


class _Renderer:
    """render() with an optional exact round-trip check of every sentence it writes."""

    def __init__(self, verify: bool):
        self.verify = verify
        self.count = 0

    def __call__(self, sentence: str, lang: Language) -> str:
        out = render(sentence, lang)
        self.count += 1
        if self.verify and unrender(out, lang) != sentence:
            raise PipelineError(f"{lang.code}: rendering is not reversible for {sentence!r}")
        return out


def _stats(rows: list[dict]) -> dict:
    lengths = np.array([len(r["prompt"]) + len(r["target"]) for r in rows]) if rows else np.zeros(1)
    return {"rows": len(rows), "chars_mean": round(float(lengths.mean()), 1),
            "chars_p50": int(np.percentile(lengths, 50)), "chars_p95": int(np.percentile(lengths, 95)),
            "chars_max": int(lengths.max()),
            "target_chars_max": max((len(r["target"]) for r in rows), default=0)}


def build(cfg: dict, out_dir: str | Path, seed: int) -> dict:
    """Write the world's splits under out_dir (see the module docstring); returns the summary."""
    _check(cfg)
    out = Path(out_dir)
    inputs = _inputs(cfg)
    langs = make_languages(cfg)
    lrl = [l for l in langs.values() if l.resource == "lrl"]
    hrl = [l for l in langs.values() if l.resource == "hrl"]
    sizes = cfg["sizes"]
    rend = _Renderer(bool(cfg.get("verify_round_trip", True)))
    eval_seed = int(cfg["eval_seed"])

    # ---- evaluation: FLORES devtest English, rendered
    f = cfg["flores"]
    flores = inputs["flores"]
    non_ascii = [i for i, s in enumerate(flores) if not all(32 <= ord(c) < 127 for c in s)]
    set_non_ascii = set(non_ascii)
    eligible = [i for i, s in enumerate(flores) if i not in set_non_ascii and len(s) <= int(f["max_chars"])]
    chosen = _sample(_split_rng(eval_seed, "flores"), eligible, min(int(f["per_language"]), len(eligible)))

    seg_words = cfg.get("segment_words")
    flores_units = [(f"flores-devtest-{i}" + (f"-{k}" if seg_words else ""), u)
                    for i in chosen for k, u in enumerate(segments(flores[i], seg_words))]

    def flores_rows(group):
        rows = []
        for lang in group:
            for uid, en in flores_units:
                rows.append({"prompt": translation_prompt(lang.code, rend(en, lang)), "target": en,
                             "group": lang.code, "reference": en, "id": uid})
        return rows

    # ---- evaluation: GSM8K test annotations as word problems
    test_items = math_items(inputs["gsm_test"], cfg)
    train_items = math_items(inputs["gsm_train"], cfg, first_only=False)
    # every expression of any GSM8K test annotation (not only the sampled ones) stays out of training
    test_exprs = all_annotation_expressions(inputs["gsm_test"])
    n_math = min(int(cfg["math"]["per_language_test"]), len(test_items))
    test_rng = _split_rng(eval_seed, "math_test")
    picked = _sample(test_rng, test_items, n_math)
    test_questions = [(it, math_question(it, test_rng)) for it in picked]
    train_pool = [it for it in train_items if (it["a"], it["op"], it["b"]) not in test_exprs]
    excluded_train_math = len(train_items) - len(train_pool)
    dev_rng = _split_rng(seed, "math_dev_pool")
    exprs = sorted({(it["a"], it["op"], it["b"]) for it in train_pool})
    n_dev_exprs = min(int(sizes["math_dev_expressions"]), len(exprs) // 4)
    dev_exprs = set(_sample(dev_rng, exprs, n_dev_exprs))
    dev_pool = [it for it in train_pool if (it["a"], it["op"], it["b"]) in dev_exprs]
    train_pool = [it for it in train_pool if (it["a"], it["op"], it["b"]) not in dev_exprs]

    answer_format = cfg["math"].get("answer_format", "number")

    def math_rows(code, lang, questions, evaluation=True, split="test"):
        rows = []
        for it, q in questions:
            text = q if lang is None else rend(q, lang)
            row = {"prompt": math_prompt(code, text), "target": math_answer(it, answer_format), "group": code,
                   "expression": f"{it['a']}{it['op']}{it['b']}"}
            if evaluation:
                row |= {"reference": it["value"], "id": f"gsm8k-{split}-{it['index']}"}
            rows.append(row)
        return rows

    def math_set(group, questions, with_english, split="test"):
        rows = []
        if with_english:
            rows += math_rows("en", None, questions, split=split)
        for lang in group:
            rows += math_rows(lang.code, lang, questions, split=split)
        return rows

    def drawn_questions(pool, n, key, random_fraction=0.0):
        """n problems from pool; with random_fraction, that share over random operands (no test expression)."""
        rng = _split_rng(seed, key)
        out = []
        for _ in range(n):
            if rng.random() < random_fraction:
                while True:
                    it = random_math_item(rng, list(cfg["math"]["ops"]), int(cfg["math"]["max_operand"]))
                    if (it["a"], it["op"], it["b"]) not in test_exprs and (it["a"], it["op"], it["b"]) not in dev_exprs:
                        break
            else:
                it = pool[int(rng.integers(len(pool)))]
            out.append((it, math_question(it, rng)))
        return out

    # ---- English: dev sentences held out, the rest for training
    pool = inputs["pool"]
    rng = _split_rng(seed, "english_dev")
    n_dev_sent = min(int(sizes["dev_sentences"]), len(pool) // 10)
    dev_idx = set(rng.choice(len(pool), size=n_dev_sent, replace=False).tolist())
    dev_sentences = [pool[i] for i in sorted(dev_idx)]
    train_sentences = [s for i, s in enumerate(pool) if i not in dev_idx]
    segments_dropped = 0
    if seg_words:  # held out by whole unit first; then no segment equal to a FLORES devtest segment anywhere, and
        # no dev segment equal to a training one (4-word phrases recur: "how many does he")
        flores_segments = {normalise(u) for s in flores for u in segments(s, seg_words)}
        train_sentences = [u for s in train_sentences for u in segments(s, seg_words)]
        kept = [u for u in train_sentences if normalise(u) not in flores_segments]
        segments_dropped = len(train_sentences) - len(kept)
        train_sentences, in_train = kept, set(kept)
        dev_sentences = [u for s in dev_sentences for u in segments(s, seg_words)
                         if normalise(u) not in flores_segments and u not in in_train]

    english_train = [{"prompt": "", "target": s} for s in _sample(
        _split_rng(seed, "english_train"), train_sentences, min(int(sizes["english_train"]), len(train_sentences)))]

    hrl_mt, hrl_math = [], []
    for lang in hrl:
        for s in _sample(_split_rng(seed, "hrl_translation", lang.code), train_sentences,
                         int(sizes["hrl_translation_per_language"])):
            hrl_mt.append({"prompt": translation_prompt(lang.code, rend(s, lang)), "target": s, "group": lang.code})
    n_math_train = int(sizes["math_train_per_language"])
    for code, lang in [("en", None)] + [(l.code, l) for l in hrl]:
        hrl_math += math_rows(code, lang, drawn_questions(train_pool, n_math_train, f"math_train/{code}",
                                                          float(cfg["math"].get("train_random_fraction", 0.0))),
                              evaluation=False)

    mono, bitext, dc = [], [], []
    n_mono, n_bi = int(sizes["lrl_monolingual_per_language"]), int(sizes["lrl_bitext_per_language"])
    # bitext rows in the evaluated direction (XX -> En); the rest En -> XX. 0.5: each pair in either direction
    to_english = float(cfg.get("bitext_to_english", 0.5))
    if not 0.0 <= to_english <= 1.0:
        raise PipelineError(f"worlds.languages.data.bitext_to_english must be in [0, 1], got {to_english}")
    # text: the pair as plain text (loss on both sides, as a web corpus holds it); task: XX -> En rows in the
    # translation format, loss on the English side only (as the task rows of mB's HRL data)
    bitext_format = cfg.get("bitext_format", "text")
    if bitext_format not in ("text", "task"):
        raise PipelineError(f"worlds.languages.data.bitext_format must be text or task, not {bitext_format!r}")
    bitext_as_task = bitext_format == "task"
    comp = cfg["composition"]
    n_dc = int(round(float(comp["fraction"]) * (n_mono + n_bi)))
    for lang in lrl:
        r = _split_rng(seed, "lrl", lang.code)
        sents = _sample(r, train_sentences, n_mono + n_bi)
        order = r.permutation(len(sents))
        mono_s = [sents[i] for i in sorted(order[:n_mono])]
        bi_s = [sents[i] for i in sorted(order[n_mono:])]
        rendered = {s: rend(s, lang) for s in sents}
        for s in mono_s:
            mono.append({"prompt": "", "target": f"<{lang.code}> {rendered[s]}", "group": lang.code})
        n_to_en = int(round(to_english * len(bi_s)))
        for j, s in enumerate(bi_s):
            if j < n_to_en and bitext_as_task:
                bitext.append({"prompt": translation_prompt(lang.code, rendered[s]), "target": s, "group": lang.code})
                continue
            if j < n_to_en:
                t = f"<{lang.code}> {rendered[s]} = {s}"
            else:
                t = f"<en> {s} = <{lang.code}> {rendered[s]}"
            bitext.append({"prompt": "", "target": t, "group": lang.code})
        # D_C: a share of mA's own sentences of this language, in the task format
        dc_s = _sample(r, sents, min(n_dc, len(sents)))
        n_task = int(round(float(comp["task_fraction"]) * len(dc_s)))
        task_idx = set(r.choice(len(dc_s), size=n_task, replace=False).tolist())
        for j, s in enumerate(dc_s):
            if j in task_idx:
                dc.append({"prompt": translation_prompt(lang.code, rendered[s]), "target": s, "group": lang.code})
            else:
                dc.append({"prompt": "", "target": f"<{lang.code}> {rendered[s]}", "group": lang.code})
        n_dc_math = int(round(float(comp.get("math_fraction", 0.0)) * len(dc_s)))
        if n_dc_math:
            dc += math_rows(lang.code, lang, drawn_questions(train_pool, n_dc_math, f"dc_math/{lang.code}"),
                            evaluation=False)

    # ---- dev sets
    n_dev = int(sizes["dev_per_language"])
    translation_dev = []
    for lang in lrl + hrl:
        for s in _sample(_split_rng(seed, "translation_dev", lang.code), dev_sentences, min(n_dev, len(dev_sentences))):
            translation_dev.append({"prompt": translation_prompt(lang.code, rend(s, lang)), "target": s,
                                    "group": lang.code, "reference": s})
    dev_q = drawn_questions(dev_pool, n_dev, "math_dev") if dev_pool else []
    math_dev = math_set(lrl + hrl, dev_q, with_english=True, split="train")

    files = {
        "english_train": english_train,
        "hrl_translation_train": hrl_mt,
        "hrl_math_train": hrl_math,
        "lrl_monolingual_train": mono,
        "lrl_bitext_train": bitext,
        "composition_train": dc,
        "translation_dev": translation_dev,
        "math_dev": math_dev,
        "flores_lrl_test": flores_rows(lrl),
        "flores_hrl_test": flores_rows(hrl),
        "math_lrl_test": math_set(lrl, test_questions, with_english=False),
        "math_hrl_test": math_set(hrl, test_questions, with_english=True),
    }
    for name, rows in files.items():
        atomic_write_jsonl(out / f"{name}.jsonl", rows)

    flores_lengths = [len(u) for _, u in flores_units]
    summary = {
        "world": WORLD,
        "seed": seed,
        "language_seed": int(cfg["language_seed"]),
        "eval_seed": eval_seed,
        "files": {name: _stats(rows) for name, rows in files.items()},
        "languages": {"lrl": [l.code for l in lrl], "hrl": [l.code for l in hrl],
                      "near": [l.code for l in langs.values() if l.kind == "near"],
                      "far": [l.code for l in langs.values() if l.kind == "far"]},
        "language_details": {code: _describe(l) for code, l in langs.items()},
        "paper_columns": cfg.get("paper_columns", {}),
        "english": inputs["info"],
        "flores": {"devtest_sentences": len(flores), "non_ascii_excluded": len(non_ascii),
                   "max_chars": int(f["max_chars"]), "eligible": len(eligible), "chosen": len(chosen),
                   "chosen_chars_mean": round(float(np.mean(flores_lengths)), 1) if chosen else 0,
                   "segment_words": seg_words, "units_per_language": len(flores_units),
                   "training_segments_equal_to_a_flores_segment_dropped": segments_dropped,
                   "chosen_indices": chosen},
        "math": {"ops": list(cfg["math"]["ops"]), "max_operand": int(cfg["math"]["max_operand"]),
                 "test_problems_qualifying": len(test_items), "test_problems_chosen": len(picked),
                 "test_expressions_excluded_from_training": len(test_exprs),
                 "train_annotations_dropped_as_test_expressions": excluded_train_math,
                 "train_annotations": len(train_pool), "dev_annotations": len(dev_pool),
                 "train_random_fraction": float(cfg["math"].get("train_random_fraction", 0.0))},
        "composition": {"rows": len(dc), "fraction_of_mA_rows": round(len(dc) / max(1, len(mono) + len(bitext)), 4),
                        "task_fraction": float(comp["task_fraction"])},
        "sentences_rendered": rend.count,
        "round_trip_verified": rend.verify,
        "vocabulary_size": len(vocabulary(cfg)),
    }
    atomic_write_json(out / "summary.json", summary)
    return summary


def _describe(lang: Language) -> dict:
    d = lang.describe()
    sample = [w for w in ("the", "of", "and", "is", "water", "people", "city", "apples", "how", "many")
              if w in lang.swap][:8]
    d["lexicon_sample"] = {w: lang.render_word(w) for w in sample}
    return d
