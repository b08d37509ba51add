"""The language world's English sources: the benchmark files (FLORES-200, GSM8K), the English units training may
use (GSM8K train questions, stdlib docstring prose) with the FLORES and GSM8K test sentences kept out, cached per
cfg."""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
import sysconfig
from collections import Counter
from functools import lru_cache
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.worlds.languages.tasks import FORMAT_CHARS
from pipeline.worlds.languages.synthetic_language import _ENGLISH_TOKEN


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[a-z]+")


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
