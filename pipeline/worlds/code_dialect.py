"""A Python dialect: the language with its most common builtins and builtin-type methods renamed among themselves.

Why: a real-anchor setting of the code world composes a real code model mB (it knows Python: e.g.
Qwen2.5-Coder-0.5B-Instruct) with a small mA trained here. For mA to hold code knowledge the anchor lacks
(construction (b) of the project's issue: a reversible renaming only mA was trained on), mA's code, and every code
prompt of the evaluation, is written in this dialect. The renaming is a *permutation* of names among themselves,
not a renaming to fresh names: a model that does not know the dialect and writes `len(x)` gets, once the code is
renamed back, some other builtin, and fails; with fresh names its plain `len` would still run.

What: two fixed lists below, BUILTINS (functions and types of `builtins`) and METHODS (methods of the builtin
types str, list, dict, set, tuple, bytes). `Dialect.from_config({"seed": k})` maps every name to another name of
its own list (a seeded derangement: no name keeps its meaning; a builtin stays a builtin, a method a method) and
keeps the inverse. `apply` writes Python in the dialect, `restore` writes it back; generated dialect code is
restored before it runs.

How: `rename_identifiers` renames NAME tokens (the `tokenize` module), by character offsets in the original text,
so strings, comments, numbers, whitespace and line endings stay byte-identical, and restore(apply(x)) == x. The
renaming is per token, whatever the token means: a variable called `count`, an attribute `os.path.join` and a
module `copy` are renamed like the method names they share; since the mapping is a bijection this loses nothing.
Prose in docstrings and comments is never renamed (so a docstring's `>>> len(x)` stays plain Python).
Code that does not tokenize (model output) is renamed up to where tokenize gives up, and never raises. Where that
is depends on the running Python's tokenize (3.11 here; another version's may stop elsewhere); apply and
restore always stop at the same place, so restore(apply(x)) == x holds for any text.
"""
from __future__ import annotations

import hashlib
import itertools
import keyword
import tokenize
from dataclasses import dataclass
from typing import Mapping, Sequence

from pipeline.errors import PipelineError

# The names, fixed here so that the dialect never depends on the machine. Chosen by how often each appears as a
# NAME token (builtins) or as an attribute after "." (methods), ranked by its mean share over three corpora:
# Python 3.11.7's stdlib (601 files; test, idlelib, lib2to3 skipped), HumanEval's 164 prompts + canonical
# solutions, and MBPP's 974 reference programs (experiments/table4/dialect_names.py prints the ranking; it leaves
# out dunders and exception classes). Each list is its 40 highest-ranked names, in rank order, less these builtins
# (ranks 13-46): NotImplemented (a constant); input, dir, id (mostly variable names in that code, seldom the
# builtin); open, help, globals (files, the terminal, scopes: a dialect program run without restoring should not
# reach them by accident); and `format`, a builtin and a str method: a name is in one list only, and as an
# attribute it is the more common (METHODS has it).
BUILTINS = (
    "len", "range", "str", "int", "list", "sum", "isinstance", "max", "sorted", "set",
    "min", "tuple", "float", "type", "object", "dict", "print", "ord", "map", "getattr",
    "zip", "abs", "hasattr", "enumerate", "property", "filter", "bytes", "super", "next", "all",
    "round", "bool", "repr", "classmethod", "bin", "any", "pow", "chr", "reversed", "setattr",
)
METHODS = (
    "append", "join", "split", "sort", "count", "replace", "items", "get", "lower", "add",
    "format", "isalpha", "pop", "extend", "index", "remove", "keys", "isupper", "encode", "startswith",
    "values", "islower", "isdigit", "strip", "decode", "setdefault", "swapcase", "clear", "update", "reverse",
    "endswith", "copy", "find", "upper", "rstrip", "isspace", "capitalize", "intersection", "insert", "title",
)
NAME_LISTS = {"builtins": BUILTINS, "methods": METHODS}

# Python >= 3.12 splits f-strings into tokens (names inside included); 3.11, this project's Python, gives an
# f-string as one STRING token, so the names inside it are never renamed. To keep that the same on every version,
# the tokens between FSTRING_START and FSTRING_END are skipped (on 3.11 these token types do not exist).
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass(frozen=True)
class Dialect:
    seed: int
    forward: dict[str, str]    # Python name -> dialect name
    inverse: dict[str, str]    # dialect name -> Python name

    @classmethod
    def from_config(cls, cfg: Mapping) -> "Dialect":
        """cfg = {"seed": int}: the seed picks the permutation within each name list."""
        if not isinstance(cfg, Mapping) or set(cfg) != {"seed"}:
            raise PipelineError(f"code dialect: the config must be {{seed: <int>}}, got {cfg!r}")
        seed = cfg["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise PipelineError(f"code dialect: seed must be an integer, got {seed!r}")
        forward = {}
        for list_name, names in NAME_LISTS.items():
            forward.update(derangement(names, f"{seed}:{list_name}"))
        return cls(seed, forward, dict(sorted((b, a) for a, b in forward.items())))

    def apply(self, source: str) -> str:
        """Python -> the dialect."""
        return rename_identifiers(source, self.forward)

    def restore(self, source: str) -> str:
        """The dialect -> Python."""
        return rename_identifiers(source, self.inverse)

    def describe(self) -> dict:
        return {"seed": self.seed, **{f"{k}_renamed": len(v) for k, v in NAME_LISTS.items()}}


def derangement(names: Sequence[str], salt: str) -> dict[str, str]:
    """Each name -> the next one in a seeded order, the last -> the first: one cycle through all names, so no name
    maps to itself (for two or more names). The order sorts the names by sha256(salt, name): it depends on the salt
    and the names alone, not on a random generator whose stream a library version could change."""
    order = sorted(names, key=lambda n: hashlib.sha256(f"{salt}\x00{n}".encode()).digest())
    return dict(zip(order, order[1:] + order[:1]))


# ---------------------------------------------------------------- renaming


def rename_identifiers(source: str, mapping: Mapping[str, str]) -> str:
    """`source` with every NAME token (keywords excepted) whose text is a key of `mapping` replaced by its value;
    every other character unchanged. Never raises: code that stops tokenizing is renamed up to that point.
    The values must be identifiers that are neither keywords nor string prefixes (r, b, f, u, ...), or the
    renamed text could tokenize differently from the original and not rename back."""
    if not mapping or not source:
        return source
    lines = _physical_lines(source)
    line_starts = list(itertools.accumulate(map(len, lines), initial=0))
    pieces, done = [], 0
    for row, col, name in _name_tokens(lines):
        new = mapping.get(name)
        start = line_starts[row] + col
        if new is None or not source.startswith(name, start):
            continue
        # a name glued to the number before it (`1if`, `0xlen`) is left alone: renamed, the pair could tokenize
        # differently, and then not rename back
        if start and (source[start - 1].isalnum() or source[start - 1] == "_"):
            continue
        pieces += [source[done:start], new]
        done = start + len(name)
    pieces.append(source[done:])
    return "".join(pieces)


def _physical_lines(source: str) -> list[str]:
    """The lines tokenize is fed, split at "\\n" only (each keeps its "\\r\\n" or "\\n"), so that a token's
    (row, column) is an offset into exactly these strings."""
    parts = source.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _name_tokens(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, column, text) of each NAME token that is not a keyword and not inside an f-string.

    Errors: tokenize stops at an unindent that matches no outer level (frequent in generated code): the scan
    goes on from that line as if a new block began there. It also stops at the end of the text inside an
    unterminated triple-quoted string or bracket: everything before was scanned, and there is nothing after.
    Other oddities (an unterminated one-line string, a stray `$`) are error tokens tokenize steps over."""
    found: list[tuple[int, int, str]] = []
    first = 0
    while first < len(lines):
        try:
            _scan(lines, first, found)
            break
        except IndentationError as e:
            if not e.lineno or e.lineno <= 1:   # (cannot happen on the first line of a scan; never loop)
                break
            first += e.lineno - 1
        except (tokenize.TokenError, SyntaxError, ValueError):
            break
    return found


def _scan(lines: list[str], first: int, found: list) -> None:
    """Tokenize lines[first:], appending the NAME tokens to `found` as they come (kept if tokenize raises)."""
    rest = iter(lines[first:])
    fstring_depth = 0
    for tok in tokenize.generate_tokens(lambda: next(rest, "")):
        if tok.type == _FSTRING_START:
            fstring_depth += 1
        elif tok.type == _FSTRING_END:
            fstring_depth -= 1
        elif tok.type == tokenize.NAME and not fstring_depth and not keyword.iskeyword(tok.string):
            found.append((first + tok.start[0] - 1, tok.start[1], tok.string))

