"""The code world's standard-library corpus: this interpreter's standard library parsed with `ast`, and the prose
of its docstrings (the near-copy checks that keep benchmark items and held-out functions out of training:
near_copies.py).

Functions (`stdlib_functions`): every function defined at module level or in a class body (methods included,
functions nested in functions are part of their parent) of the .py files under sysconfig's `stdlib` path,
skipping test packages, demo/tool packages and vendored code (`SKIP_DIRS`).  Each is cut out of its file
with its decorators and dedented; a function whose dedented source does not parse to the same AST (a
multi-line string that dedenting would change) is skipped.  (Counts on Python 3.11.7: docs/world-code.md.)
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import sysconfig
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pipeline.worlds.code.near_copies import _SENTENCE_END, _is_docstring, _parse_quietly, code_tokens

# Directories under the stdlib that are not library code: test suites (test, tests, idle_test, unittest's
# own test package), demos and tools, the vendored pip/setuptools wheels' site-packages, 2to3's fixtures.
SKIP_DIRS = {"test", "tests", "idle_test", "idlelib", "turtledemo", "site-packages", "lib2to3", "ensurepip",
             "__pycache__", "Tools", "tkinter_test"}
PRINTABLE = frozenset(chr(c) for c in range(32, 127)) | {"\n"}
SPECIAL_STRINGS = ("<pad>", "<bos>", "<eos>", "<unk>")  # the character tokenizer's special tokens


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
