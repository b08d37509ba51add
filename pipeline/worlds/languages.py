"""World II: low-resource languages (paper §4.2, Tables 2-3, Figure 2), the data side.

The knowledge mB lacks and mA has is built: synthetic languages (synthetic_languages.py), each a fixed, seeded,
reversible transform of real English, named `syn-<iso639-3 of its letter statistics' source>` (it is not that
language). Low-resource (LRL) languages appear only in mA's data, high-resource (HRL) ones only in mB's; English
("en") is an HRL for the math task. `build(cfg, out_dir, seed)` writes (JSONL, `group` = the row's language):
  english_train                                  English prose (GSM8K train questions, stdlib docstrings), plain text
  hrl_translation_train, hrl_math_train          mB's task rows ("<syn-xx> {sentence} = " -> English; "Q: ... A: ")
  lrl_monolingual_train, lrl_bitext_train        mA's data (the NTL analogue)
  composition_train                              D_C: `composition.fraction` (paper: ~5%) of mA's LRL rows
  translation_dev, math_dev                      held-out dev rows
  flores_lrl_test, flores_hrl_test               FLORES-200 devtest English rendered into each language (chrF)
  math_lrl_test, math_hrl_test                   one-step problems from GSM8K test calculator steps (accuracy)
No training unit is a FLORES devtest or GSM8K test sentence or a near copy of one, and no training problem has a
GSM8K test (a, op, b). Seeds: `language_seed` the languages, `eval_seed` the evaluation sets, `seed` the training
samples.

The formats, the English sources, the math task, the evaluation subsample and the measured sizes:
docs/world-languages.md.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
import sysconfig
import zlib
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError
from pipeline.io import atomic_write_json, atomic_write_jsonl
from pipeline.worlds.synthetic_languages import (_ENGLISH_TOKEN, Language, build_language, language_stats,
                                                 render, unrender)

WORLD = "languages"
PRINTABLE = "".join(chr(c) for c in range(32, 127))
FORMAT_CHARS = set("=<>")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[a-z]+")
_ANNOTATION = re.compile(r"<<([^<>=]*)=([^<>]*)>>")

NAMES = ["Tom", "Anna", "Maria", "James", "Lisa", "Omar", "Mei", "Carlos", "Sara", "John", "Aisha", "Ben",
         "Emma", "Ravi", "Kofi", "Nina", "Leo", "Yuki", "Ali", "Rosa", "Sam", "Ivan", "Zoe", "Max"]
OBJECTS = ["apples", "books", "pencils", "cookies", "marbles", "stickers", "eggs", "cards", "toys", "flowers",
           "shells", "coins", "oranges", "candles", "stamps", "balloons", "cupcakes", "bottles", "rocks",
           "tickets"]
# one-step word problems; a, b are the annotation's operands in its order, the answer is a op b.  The "+" and
# "-" frames are aligned: frame i has the same words for both except the verb that decides the operation,
# so a model has to read that verb (in the problem's language) to pick the operation.
TEMPLATES = {
    "+": ["There are {a} {o} in a box and {n} puts in {b}. How many {o} are in the box now?",
          "At the market {n} had {a} {o} and then bought {b}. How many {o} does {n} have now?",
          "Last week {n} had {a} {o} and found {b}. How many {o} does {n} have now?",
          "A shop has {a} {o} and gets {b}. How many {o} does the shop have now?",
          "On Monday {n} had {a} {o}. Then {n} won {b}. How many {o} does {n} have now?"],
    "-": ["There are {a} {o} in a box and {n} takes out {b}. How many {o} are in the box now?",
          "At the market {n} had {a} {o} and then sold {b}. How many {o} does {n} have now?",
          "Last week {n} had {a} {o} and lost {b}. How many {o} does {n} have now?",
          "A shop has {a} {o} and sells {b}. How many {o} does the shop have now?",
          "On Monday {n} had {a} {o}. Then {n} gave away {b}. How many {o} does {n} have now?"],
    "*": ["There are {a} bags with {b} {o} in each bag. How many {o} are there in total?",
          "Each day {n} gets {b} {o}. How many {o} does {n} get in {a} days?"],
    "/": ["There are {a} {o} shared equally by {b} friends. How many {o} does each friend get?",
          "A teacher puts {a} {o} into {b} equal groups. How many {o} are in each group?"],
}


# Which splits each model of the world trains on, and how each evaluation split is scored: for wiring the
# world into the pipeline (the lead's conf decides; these are the intended roles).
MODEL_DATA = {
    "vanilla": ["english_train"],                                          # the English checkpoint
    "mB": ["english_train", "hrl_translation_train", "hrl_math_train"],    # anchor: English + HRL tasks
    "mA": ["lrl_monolingual_train", "lrl_bitext_train"],                   # augmenting: from vanilla, + "NTL"
    "calm": ["composition_train"],                                         # D_C
    "skyline": ["lrl_monolingual_train", "lrl_bitext_train"],              # mB further trained on mA's data
}
EVALUATION_METRICS = {  # split -> metric (chrf: pipeline.benchmarks.metrics.corpus_chrf per group;
    "flores_lrl_test": "chrf",  # accuracy: extraction.extract_number vs `reference`, per group)
    "flores_hrl_test": "chrf",
    "math_lrl_test": "accuracy",
    "math_hrl_test": "accuracy",
    "translation_dev": "chrf",
    "math_dev": "accuracy",
}


# ---------------------------------------------------------------- inputs


def _benchmarks(cfg: dict) -> dict:
    root = Path(os.path.expanduser(str(cfg["benchmarks_dir"])))
    paths = {"flores": root / "flores200" / "devtest" / "eng_Latn.devtest",
             "gsm8k_train": root / "gsm8k" / "train.jsonl", "gsm8k_test": root / "gsm8k" / "test.jsonl"}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise PipelineError(f"languages world: benchmark data missing: {', '.join(missing)} (set benchmarks_dir, "
                            f"now {cfg['benchmarks_dir']!r}; FLORES-200 devtest and GSM8K are read there, never "
                            f"copied into the repository)")
    return paths


def benchmark_files(cfg: dict) -> list[Path]:
    """The benchmark files build() reads (checked against their SHA256SUMS when read)."""
    return list(_benchmarks(cfg).values())


def _read_lines(path: Path) -> list[str]:
    from pipeline.benchmarks.data import read_benchmark_text

    text = read_benchmark_text(path)
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _read_gsm(path: Path) -> list[dict]:
    from pipeline.benchmarks.data import read_benchmark_jsonl

    return read_benchmark_jsonl(path)


def normalise(s: str) -> str:
    """Letters and digits, lowercased, single-spaced: what near-copy checks compare."""
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


def ngrams(s: str, n: int) -> set:
    w = normalise(s).split()
    return {" ".join(w[i:i + n]) for i in range(len(w) - n + 1)}


def _clean(s: str) -> str:
    return " ".join(s.split())


def _sentence_ok(s: str, lo: int, hi: int) -> bool:
    return lo <= len(s) <= hi and all(32 <= ord(c) < 127 for c in s) and not (set(s) & FORMAT_CHARS) \
        and any(c.isalpha() for c in s)


def gsm_question_sentences(rows: list[dict]) -> list[str]:
    return [s for doc in gsm_question_documents(rows) for s in doc]


def gsm_question_documents(rows: list[dict]) -> list[list[str]]:
    """Each GSM8K question as its list of sentences."""
    return [[_clean(s) for s in _SENTENCE_SPLIT.split(r["question"].strip()) if s.strip()] for r in rows]


def _units(documents: list[list[str]], pairs: bool) -> list[str]:
    """Training units: every sentence, and (with pairs) every two consecutive sentences of a document."""
    out = []
    for doc in documents:
        out += doc
        if pairs:
            out += [a + " " + b for a, b in zip(doc, doc[1:])]
    return out


_DOC_BAD = re.compile(r"[_=<>{}\[\]`*|\\@#%^~]")


@lru_cache(maxsize=1)
def python_docstring_documents() -> tuple[tuple[str, ...], ...]:
    """Prose sentences of the docstrings of this interpreter's standard library (no tests, no idlelib),
    grouped by docstring paragraph."""
    root = sysconfig.get_paths()["stdlib"]
    skip = {"test", "tests", "idlelib", "site-packages", "lib2to3", "__pycache__", "turtledemo", "ensurepip"}
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("config-"))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            try:
                tree = ast.parse(Path(dirpath, name).read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        out.extend(_doc_paragraphs(doc))
    return tuple(out)


def _doc_paragraphs(doc: str):
    for para in re.split(r"\n\s*\n", doc):
        lines = [line.strip() for line in para.splitlines()]
        if any(line.startswith((">>>", "...", "-", "*", "+", "|")) for line in lines):
            continue
        sentences = []
        for s in _SENTENCE_SPLIT.split(" ".join(line for line in lines if line)):
            s = _clean(s)
            if (s and s[0].isupper() and s[-1] in ".!?" and not _DOC_BAD.search(s) and "()" not in s
                    and sum(c.isalpha() or c == " " for c in s) >= 0.9 * len(s)):
                sentences.append(s)
            elif sentences:  # a dropped sentence breaks the run: pairs are consecutive in the text
                yield tuple(sentences)
                sentences = []
        if sentences:
            yield tuple(sentences)


@lru_cache(maxsize=4)
def _english_cached(cfg_json: str) -> dict:
    cfg = json.loads(cfg_json)
    paths = _benchmarks(cfg)
    e = cfg["english"]
    lo, hi, n = int(e["min_chars"]), int(e["max_chars"]), int(e["near_copy_ngram"])
    flores = _read_lines(paths["flores"])
    gsm_train = _read_gsm(paths["gsm8k_train"])
    gsm_test = _read_gsm(paths["gsm8k_test"])
    sources: dict[str, list[str]] = {}
    pairs = bool(e.get("pairs", True))
    if e.get("gsm8k_train_questions", True):
        sources["gsm8k_train_questions"] = _units(gsm_question_documents(gsm_train), pairs)
    if e.get("python_docstrings", False):
        sources["python_docstrings"] = _units([list(d) for d in python_docstring_documents()], pairs)
    if not sources:
        raise PipelineError("languages world: english names no source (gsm8k_train_questions, python_docstrings)")
    flores_norm = {normalise(s) for s in flores}
    flores_grams = set().union(*(ngrams(s, n) for s in flores))
    test_sentences = gsm_question_sentences(gsm_test)
    test_norm = {normalise(s) for s in test_sentences}
    test_grams = set().union(*(ngrams(s, n) for s in test_sentences))
    seen, pool = set(), []
    excluded = Counter({"length_or_characters": 0, "duplicate": 0, "flores_devtest_near_copy": 0,
                        "gsm8k_test_near_copy": 0})
    per_source = {}
    for name, sentences in sources.items():
        kept = 0
        for s in sentences:
            if not _sentence_ok(s, lo, hi):
                excluded["length_or_characters"] += 1
                continue
            if s in seen:
                excluded["duplicate"] += 1
                continue
            seen.add(s)
            ns, grams = normalise(s), ngrams(s, n)
            if ns in flores_norm or grams & flores_grams:
                excluded["flores_devtest_near_copy"] += 1
                continue
            if ns in test_norm or grams & test_grams:
                excluded["gsm8k_test_near_copy"] += 1
                continue
            pool.append(s)
            kept += 1
        per_source[name] = {"units": len(sentences), "kept": kept}
    counts = Counter(t for s in gsm_question_sentences(gsm_train) for t in _ENGLISH_TOKEN.findall(s)
                     if _WORD.fullmatch(t))
    lexicon_words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    avoid = set(counts) | {w.lower() for s in flores for w in re.findall(r"[A-Za-z]+", s)}
    info = {"sources": per_source, "pool_units": len(pool), "pool_chars": sum(map(len, pool)),
            "unit": "a sentence, or two consecutive sentences" if pairs else "a sentence",
            "excluded": dict(sorted(excluded.items())), "near_copy_ngram": n}
    if "python_docstrings" in sources:
        info["python_version"] = sys.version.split()[0]
        info["python_docstrings_sha256"] = hashlib.sha256(
            "\n".join(sources["python_docstrings"]).encode()).hexdigest()
    return {"pool": pool, "lexicon_words": lexicon_words, "avoid": avoid, "info": info, "flores": flores,
            "gsm_train": gsm_train, "gsm_test": gsm_test}


def _inputs(cfg: dict) -> dict:
    keys = ("benchmarks_dir", "english")
    return _english_cached(json.dumps({k: cfg[k] for k in keys}, sort_keys=True))


# ---------------------------------------------------------------- languages


def language_table(cfg: dict) -> list[tuple[str, str, str]]:
    """(source, resource, kind) for every synthetic language of cfg, LRLs first."""
    out, seen = [], set()
    for resource in ("lrl", "hrl"):
        for source, kind in (cfg["languages"].get(resource) or {}).items():
            if source in seen:
                raise PipelineError(f"language {source} is listed twice (a language is LRL or HRL, not both)")
            seen.add(source)
            out.append((source, resource, kind))
    return out


def make_languages(cfg: dict) -> dict[str, Language]:
    """code -> Language for every language of cfg (LRLs first), seeded by cfg['language_seed']."""
    return _make_languages_cached(json.dumps(cfg))  # key order kept: it is the languages' order


@lru_cache(maxsize=4)
def _make_languages_cached(cfg_json: str) -> dict[str, Language]:
    cfg = json.loads(cfg_json)
    inputs = _inputs(cfg)
    settings = cfg["grammar"] | {"lexicon_size": cfg["lexicon_size"]}
    out = {}
    for source, resource, kind in language_table(cfg):
        lang = build_language(source, resource, kind, language_stats(source), inputs["lexicon_words"],
                              inputs["avoid"], settings, int(cfg["language_seed"]))
        out[lang.code] = lang
    return out


def vocabulary(cfg: dict) -> list[str]:
    """Every character the world writes: printable ASCII (English, numbers, the formats) and the letters of
    every language's source statistics, with their capitals (a superset: some letters go unused)."""
    seen = dict.fromkeys(PRINTABLE)
    for source, _, _ in language_table(cfg):
        stats = language_stats(source)
        for c in stats["letters"]:
            seen.setdefault(c)
            if stats["cased"]:
                seen.setdefault(c.upper())
    return list(seen)


# ---------------------------------------------------------------- tasks


def translation_prompt(code: str, text: str) -> str:
    return f"<{code}> {text} = "


def math_prompt(code: str, question: str) -> str:
    return f"<{code}> Q: {question} A: "


def _number(v: float) -> int:
    return int(round(v))


def math_items(rows: list[dict], cfg: dict, first_only: bool = True) -> list[dict]:
    """Qualifying calculator annotations of GSM8K solutions, {index, a, op, b, value}: the first of each
    problem (first_only), or all of them."""
    m = cfg["math"]
    ops, hi = set(m["ops"]), int(m["max_operand"])
    if not ops or ops - set("+-*/"):
        raise PipelineError(f"math.ops must be a non-empty subset of + - * /, got {m['ops']}")
    items = []
    for index, row in enumerate(rows):
        for expr, result in _ANNOTATION.findall(row["answer"]):
            mt = re.fullmatch(r"(\d+)([-+*/])(\d+)", expr.strip())
            if not mt or mt[2] not in ops:
                continue
            a, op, b = int(mt[1]), mt[2], int(mt[3])
            if not (1 <= a <= hi and 1 <= b <= hi):
                continue
            value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else -1}[op]
            try:
                stated = float(result.strip().replace(",", ""))
            except ValueError:
                continue
            if value < 0 or value != int(value) or abs(stated - value) > 1e-9:
                continue
            items.append({"index": index, "a": a, "op": op, "b": b, "value": int(value)})
            if first_only:
                break
    return items


def all_annotation_expressions(rows: list[dict]) -> set:
    """(a, op, b) of every calculator annotation `a op b` over two integers, whatever its size."""
    out = set()
    for row in rows:
        for expr, _ in _ANNOTATION.findall(row["answer"]):
            mt = re.fullmatch(r"(\d+)([-+*/])(\d+)", expr.strip())
            if mt:
                out.add((int(mt[1]), mt[2], int(mt[3])))
    return out


def random_math_item(rng: np.random.Generator, ops: list[str], hi: int) -> dict:
    """a op b with operands in [1, hi], a non-negative integer result."""
    op = ops[int(rng.integers(len(ops)))]
    while True:
        a, b = int(rng.integers(1, hi + 1)), int(rng.integers(1, hi + 1))
        if op == "-" and a < b:
            a, b = b, a
        if op == "/":
            a = a * b
            if a > hi:
                continue
        value = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
        return {"index": -1, "a": a, "op": op, "b": b, "value": value}


def segments(text: str, words: int | None) -> list[str]:
    """`text` cut into consecutive segments of `words` words (a one-word tail joins the segment before it), or
    [text] when `words` is None: the CPU preset's translation unit (tiny models learn to translate short
    segments in minutes, whole sentences not; see conf/world/languages.yaml `segment_words`)."""
    if not words:
        return [text]
    tokens = text.split(" ")
    out = [" ".join(tokens[i:i + words]) for i in range(0, len(tokens), words)]
    if len(out) > 1 and len(out[-1].split(" ")) == 1:
        out[-2:] = [out[-2] + " " + out[-1]]
    return out


def math_answer(item: dict, answer_format: str) -> str:
    """The target of a math row: the number (`number`), or GSM8K's calculator step then the number
    (`calculation`: "96 + 1 = 97", as GSM8K solutions write <<96+1=97>>; graded on the final number either way)."""
    if answer_format == "number":
        return str(item["value"])
    if answer_format == "calculation":
        return f"{item['a']} {item['op']} {item['b']} = {item['value']}"
    raise PipelineError(f"math.answer_format must be number or calculation, not {answer_format!r}")


def math_question(item: dict, rng: np.random.Generator) -> str:
    """The item as a word problem: a frame, a name and an object drawn from rng (the same draws for every
    operation, so "+" and "-" problems share their frames)."""
    templates = TEMPLATES[item["op"]]
    t = templates[int(rng.integers(len(templates)))]
    return t.format(a=item["a"], b=item["b"], n=NAMES[int(rng.integers(len(NAMES)))],
                    o=OBJECTS[int(rng.integers(len(OBJECTS)))])


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


def report_lines(cfg: dict, summary: dict) -> list[str]:
    """Lines under the world's report tables: what the synthetic languages are."""
    langs = summary["languages"]
    return [
        f"Synthetic languages (seeded transforms of English; `syn-xxx` uses the letter statistics of xxx's UDHR "
        f"text, it is not that language): {len(langs['lrl'])} LRL, {len(langs['hrl'])} HRL; near: "
        f"{', '.join(langs['near'])}; far: {', '.join(langs['far'])}.",
        f"FLORES devtest: {summary['flores']['chosen']} English sentences of <= {summary['flores']['max_chars']} "
        f"characters (printable ASCII) rendered into every language; math: {summary['math']['test_problems_chosen']} "
        f"GSM8K test calculator steps ({' '.join(summary['math']['ops'])}, operands <= "
        f"{summary['math']['max_operand']}) as one-step word problems.",
    ]
