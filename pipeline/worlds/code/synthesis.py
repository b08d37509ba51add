"""Small synthesized Python functions with an English description and behaviour tests: the code world's
HumanEval-like (CC) and MBPP-like (T2C) problems, at a size a tiny character-level model can learn.

A function is a *structure* (which components it combines; constants left out) plus constants.  Four families:

  numeric      aggregate of mapped, filtered numbers of a list or of 1..n
               "Return the sum of the squares of the even numbers in xs."
               -> return sum(x * x for x in xs if x % 2 == 0)
  string       one or two string transforms, or one string measure
               "Return s reversed and in upper case." -> return s[::-1].upper()
  pair         an expression of two integers, maybe wrapped once
               "Return the square of the sum of a and b." -> return (a + b) ** 2
  conditional  one of two values depending on a property of n
               "Return 'big' if n is greater than 7, otherwise n times 3." -> if n > 7: return 'big' / return n * 3

Every component appears in many structures, so a held-out structure (never in training, with any constants)
asks for a new combination of known parts: the evaluation items are held out by structure, which is stricter
than by identity (two functions of one structure differ only in constants, a near copy).

The expected values of the tests are computed by running the reference code (this module's own, trusted
source) in-process with a restricted set of builtins; the world also runs every evaluation row's reference
through the sandbox (evaluation.py, `verify_in_sandbox`).
"""
from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np

from pipeline.worlds.code.synthesis_families import FAMILIES, WORDS, Synth


def structures(families=None) -> list[tuple[str, str]]:
    """(family, structure) of every structure of the chosen families, in a fixed order."""
    out = []
    for fam, (make, _) in FAMILIES.items():
        if families is None or fam in families:
            out += make()
    return out


def instantiate(structure: str, rng: np.random.Generator) -> Synth:
    return FAMILIES[structure.split("|")[0]][1](structure, rng)


def draw(structure: str, rng: np.random.Generator, n_tests: int, max_tests: int | None = None,
         discriminate: bool = False, families=None, attempts: int = 12):
    """(Synth, tests) of one structure, with constants for which `n_tests` tests exist, or None.  With
    `discriminate`, the tests also reject the structure's rivals (see `rivals`) as far as `max_tests` allows."""
    for _ in range(attempts):
        s = instantiate(structure, rng)
        rival_functions = [reference(r) for r in rivals(s, rng, families)] if discriminate else ()
        tests = make_tests(s, rng, n_tests, rival_functions, max_tests)
        if tests is not None:
            return s, tests
    return None


@lru_cache(maxsize=4)
def viable_structures(families: tuple | None = None) -> tuple:
    """The structures whose functions depend on their input: with 5 of 6 seeded draws of constants, 3 random
    inputs give defined and not all equal values (e.g. the smallest even number of 1..n is always 2: dropped).
    Fixed seeds per structure: the same list on every run."""
    out = []
    for fam, st in structures(families):
        rng = np.random.default_rng(zlib.crc32(st.encode()))
        ok = sum(make_tests(instantiate(st, rng), rng, 3, tries=60) is not None for _ in range(6))
        if ok >= 5:
            out.append((fam, st))
    return tuple(out)


# ---------------------------------------------------------------- inputs and expected values

_SAFE = {"sum": sum, "max": max, "min": min, "len": len, "sorted": sorted, "set": set, "abs": abs, "list": list,
         "range": range}


def reference(s: Synth):
    """The reference function (this module's own source, run in-process with a few builtins)."""
    ns = {"__builtins__": _SAFE}
    exec(s.signature() + "\n" + s.body + "\n", ns)
    return ns[s.name]


def random_input(kind: str, rng: np.random.Generator, hints: tuple = ()) -> tuple:
    if kind == "list":
        n = int(rng.integers(4, 8))
        return ([int(v) for v in rng.integers(-9, 21, size=n)],)
    if kind == "n":
        if hints and rng.random() < 0.3:
            return (int(hints[int(rng.integers(len(hints)))]),)
        return (int(rng.integers(-6, 16)),)
    if kind == "n_positive":
        return (int(rng.integers(3, 16)),)
    if kind == "ab":
        return (int(rng.integers(-9, 30)), int(rng.integers(1, 12)))
    words = [WORDS[int(i)] for i in rng.choice(len(WORDS), size=int(rng.integers(1, 4)), replace=False)]
    words = [w.capitalize() if rng.random() < 0.3 else w for w in words]
    if rng.random() < 0.3:
        words.insert(int(rng.integers(len(words) + 1)), str(int(rng.integers(1, 100))))
    s = " ".join(words)
    if rng.random() < 0.2:
        s = " " + s + " "
    return (s,)


def _literal(v) -> str:
    if isinstance(v, set):
        return "{" + ", ".join(repr(x) for x in sorted(v)) + "}" if v else "set()"
    return repr(v)


def args_source(args: tuple) -> str:
    return ", ".join(_literal(a) for a in args)


_FAIL = object()


def _call(fn, args):
    try:
        return fn(*[list(x) if isinstance(x, list) else x for x in args])
    except (ValueError, ZeroDivisionError, IndexError, TypeError):
        return _FAIL


def _neighbours(structure: str, viable: tuple) -> list[str]:
    """Structures of the same family that differ in one component (or drop, add or swap one)."""
    fam, *parts = structure.split("|")
    out = []
    for f, other in viable:
        if f != fam or other == structure:
            continue
        q = other.split("|")[1:]
        if len(q) == len(parts):
            if sum(a != b for a, b in zip(parts, q)) == 1 or (sorted(q) == sorted(parts)):
                out.append(other)
        elif abs(len(q) - len(parts)) == 1:
            short, long_ = (q, parts) if len(q) < len(parts) else (parts, q)
            if any(long_[:i] + long_[i + 1:] == short for i in range(len(long_))):
                out.append(other)
    return out


def rivals(s: Synth, rng: np.random.Generator, families=None) -> list[Synth]:
    """Wrong functions the tests must reject: each neighbouring structure (new constants), the same structure
    with new constants, and for a conditional each branch alone."""
    out = [instantiate(st, rng) for st in _neighbours(s.structure, viable_structures(families))]
    out += [instantiate(s.structure, rng) for _ in range(2)]
    if s.family == "conditional":
        lines = s.body.split("\n")
        for branch in ("    " + lines[1].strip(), lines[2]):  # "return <then value>" / "return <else value>"
            out.append(Synth(s.family, s.structure, s.name, s.params, "", "", branch, s.kind))
    return [r for r in out if r.body != s.body]


def make_tests(s: Synth, rng: np.random.Generator, n: int, rival_functions=(), max_tests: int | None = None,
               pool_size: int = 40, tries: int = 300) -> list[tuple[str, str]] | None:
    """Between n and max_tests (args source, value source) pairs on random inputs for which the reference is
    defined: not all values equal, and, as far as `max_tests` allows, for each rival function that differs from
    the reference somewhere on a pool of inputs, one test it fails.  None if fewer than n inputs are found."""
    fn = reference(s)
    kind = "n_positive" if (s.family == "numeric" and s.kind == "n") else s.kind
    pool, seen = [], set()
    for _ in range(tries):
        args = random_input(kind, rng, s.hints)
        a = args_source(args)
        if a in seen:
            continue
        seen.add(a)
        v = _call(fn, args)
        if v is _FAIL or v is None or len(_literal(v)) > 60:
            continue
        pool.append((args, a, v))
        if len(pool) >= (pool_size if rival_functions else n):
            break
    if len(pool) < n or len({_literal(v) for _, _, v in pool}) < 2:
        return None
    max_tests = max_tests or n
    chosen = [0]
    if rival_functions:
        outs = [[_call(r, args) for args, _, _ in pool] for r in rival_functions]
        wrong = [[o is _FAIL or o != v or type(o) is not type(v) for o, (_, _, v) in zip(out, pool)] for out in outs]
        open_ = [w for w in wrong if any(w) and not w[0]]
        while open_ and len(chosen) < max_tests:
            best = max(range(len(pool)), key=lambda i: (sum(w[i] for w in open_), -i))
            if not any(w[best] for w in open_):
                break
            chosen.append(best)
            open_ = [w for w in open_ if not w[best]]
    values = {_literal(pool[i][2]) for i in chosen}
    for i in range(len(pool)):  # fill up to n, new values first
        if len(chosen) >= n:
            break
        if i not in chosen and _literal(pool[i][2]) not in values:
            chosen.append(i)
            values.add(_literal(pool[i][2]))
    for i in range(len(pool)):
        if len(chosen) >= n:
            break
        if i not in chosen:
            chosen.append(i)
    if len({_literal(pool[i][2]) for i in chosen}) < 2:
        return None
    return [(pool[i][1], _literal(pool[i][2])) for i in chosen]


def test_source(name: str, tests: list[tuple[str, str]]) -> str:
    return "".join(f"assert {name}({a}) == {v}\n" for a, v in tests)
