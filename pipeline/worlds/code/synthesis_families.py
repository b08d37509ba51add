"""The four families of synthesized functions (synthesis.py): each family's structures, and a function of a
structure with its constants drawn (`Synth`)."""
from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass
from itertools import product

WORDS = ["apple", "banana", "cherry", "river", "stone", "garden", "window", "paper", "silver", "orange",
         "market", "yellow", "pencil", "summer", "winter", "rocket", "candle", "dragon", "forest", "guitar",
         "island", "jacket", "kitten", "lemon", "mirror", "number", "ocean", "planet", "rabbit", "sunset",
         "tiger", "violet", "wonder", "zebra", "hello", "world", "python", "code", "data", "level"]
VALUE_WORDS = ["yes", "no", "big", "small", "even", "odd", "high", "low", "ok", "fail", "hot", "cold"]


@dataclass(frozen=True)
class Synth:
    family: str
    structure: str          # components without constants: the unit of holding out
    name: str               # function name
    params: tuple
    doc: str                # docstring sentence, "Return ..."
    task: str               # MBPP-style description, "Write a function that returns ..."
    body: str               # indented body lines, no trailing newline
    kind: str               # input kind: list | n | s | ab
    hints: tuple = ()       # integers worth trying as inputs (a condition's constant)

    def signature(self) -> str:
        return f"def {self.name}({', '.join(self.params)}):"

    def code(self, example: tuple | None = None) -> str:
        """The whole function: signature, docstring (with one example call when given), body."""
        return self.signature() + "\n" + self.docstring(example) + self.body

    def docstring(self, example: tuple | None = None) -> str:
        if example is None:
            return f'    """{self.doc}"""\n'
        args, value = example
        return f'    """{self.doc}\n    >>> {self.name}({args})\n    {value}\n    """\n'


def _safe_name(name: str) -> str:
    """A function name that shadows no builtin (a function named `sum` calling sum() would recurse)."""
    return name + "_all" if hasattr(builtins, name) or keyword.iskeyword(name) else name


# ---------------------------------------------------------------- numeric family

# filters: name -> (phrase over "numbers", condition on x, constant range or None, sources allowed)
FILTERS = {
    "all": ("the numbers", None, None, ("list", "upto")),
    "even": ("the even numbers", "x % 2 == 0", None, ("list", "upto")),
    "odd": ("the odd numbers", "x % 2 == 1", None, ("list", "upto")),
    "positive": ("the positive numbers", "x > 0", None, ("list",)),
    "negative": ("the negative numbers", "x < 0", None, ("list",)),
    "above": ("the numbers greater than {k}", "x > {k}", (1, 9), ("list", "upto")),
    "below": ("the numbers less than {k}", "x < {k}", (2, 9), ("list", "upto")),
    "multiple": ("the multiples of {k}", "x % {k} == 0", (3, 7), ("list", "upto")),
    "other": ("the numbers other than {k}", "x != {k}", (1, 9), ("list", "upto")),
}
# maps: name -> (phrase prefix, phrase suffix, expression of x, constant range, name part)
MAPS = {
    "id": ("", "", "x", None, ""),
    "square": ("the squares of ", "", "x * x", None, "squares"),
    "cube": ("the cubes of ", "", "x ** 3", None, "cubes"),
    "abs": ("the absolute values of ", "", "abs(x)", None, "abs"),
    "neg": ("the negatives of ", "", "-x", None, "negated"),
    "plus": ("", ", each increased by {k}", "x + {k}", (1, 9), "plus{k}"),
    "times": ("", ", each multiplied by {k}", "x * {k}", (2, 9), "times{k}"),
    "mod": ("", ", each modulo {k}", "x % {k}", (2, 9), "mod{k}"),
    "half": ("", ", each halved and rounded down", "x // 2", None, "halved"),
}
# aggregates: name -> (phrase, name part)
AGGREGATES = {
    "sum": ("the sum of {items}", "sum"),
    "max": ("the largest of {items}", "largest"),
    "min": ("the smallest of {items}", "smallest"),
    "count": ("the number of {items}", "count"),
    "list": ("a list of {items}", "select"),
    "sorted": ("a sorted list of {items}", "sorted"),
    "desc": ("a list, in descending order, of {items}", "descending"),
    "set": ("the set of {items}", "unique"),
}
SOURCES = {"list": ("xs", "in xs", "in a list", "xs"), "upto": ("n", "from 1 to n", "from 1 to n", "range(1, n + 1)")}
FILTER_NAMES = {"all": "", "even": "even", "odd": "odd", "positive": "positive", "negative": "negative",
                "above": "above{k}", "below": "below{k}", "multiple": "multiples{k}", "other": "not{k}"}


def _numeric_structures():
    out = []
    for src, (agg, mp, flt) in product(SOURCES, product(AGGREGATES, MAPS, FILTERS)):
        if src not in FILTERS[flt][3]:
            continue
        if agg == "count" and mp != "id":
            continue  # a count does not depend on a map
        if src == "upto" and (mp == "abs" or (agg == "count" and flt == "all")):
            continue  # abs of 1..n is the identity; counting 1..n is n
        if src == "upto" and flt == "all" and agg in ("list", "sorted"):
            continue  # list(range(1, n + 1)) is too trivial next to the rest
        out.append(("numeric", f"numeric|{src}|{agg}|{mp}|{flt}"))
    return out


def _numeric(structure: str, rng) -> Synth:
    _, src, agg, mp, flt = structure.split("|")
    fphrase, cond, frange, _ = FILTERS[flt]
    pre, suf, expr, mrange, mname = MAPS[mp]
    kf = int(rng.integers(frange[0], frange[1] + 1)) if frange else None
    km = int(rng.integers(mrange[0], mrange[1] + 1)) if mrange else None
    param, doc_src, task_src, it = SOURCES[src]
    items = pre + fphrase.format(k=kf)
    phrase = AGGREGATES[agg][0].format(items=items)
    doc = f"Return {phrase} {doc_src}{suf.format(k=km)}."
    task = f"Write a function that returns {phrase} {task_src}{suf.format(k=km)}."
    e = expr.format(k=km)
    c = f" if {cond.format(k=kf)}" if cond else ""
    gen = f"{e} for x in {it}{c}"
    trivial = e == "x" and not c
    if agg == "sum":
        code = f"sum({it})" if trivial else f"sum({gen})"
    elif agg in ("max", "min"):
        code = f"{agg}({it})" if trivial else f"{agg}({gen})"
    elif agg == "count":
        code = f"len({it})" if trivial else f"len([{gen}])"
    elif agg == "list":
        code = f"list({it})" if trivial else f"[{gen}]"
    elif agg == "sorted":
        code = f"sorted({it})" if trivial else f"sorted({gen})"
    elif agg == "desc":
        code = f"sorted({it}, reverse=True)" if trivial else f"sorted([{gen}], reverse=True)"
    else:
        code = f"set({it})" if trivial else "{" + gen + "}"
    parts = [AGGREGATES[agg][1], mname.format(k=km), FILTER_NAMES[flt].format(k=kf)]
    name = "_".join(p for p in parts if p) + ("_to_n" if src == "upto" else "")
    return Synth("numeric", structure, _safe_name(name), (param,), doc, task, f"    return {code}", "list" if src == "list" else "n")


# ---------------------------------------------------------------- string family

# transforms: name -> (phrase, code template on {e}, constant kind, name part)
TRANSFORMS = {
    "upper": ("in upper case", "{e}.upper()", None, "upper"),
    "lower": ("in lower case", "{e}.lower()", None, "lower"),
    "title": ("in title case", "{e}.title()", None, "title"),
    "reverse": ("reversed", "{e}[::-1]", None, "reversed"),
    "strip": ("without surrounding spaces", "{e}.strip()", None, "stripped"),
    "nospace": ("with all spaces removed", "{e}.replace(' ', '')", None, "nospaces"),
    "replace": ("with every '{a}' replaced by '{b}'", "{e}.replace('{a}', '{b}')", "ab", "replace_{a}_{b}"),
    "head": ("cut to its first {k} characters", "{e}[:{k}]", "k", "first{k}"),
    "tail": ("cut to its last {k} characters", "{e}[-{k}:]", "k", "last{k}"),
    "novowel": ("with the vowels removed", "''.join(c for c in {e} if c not in 'aeiouAEIOU')", None, "novowels"),
    "repeat": ("repeated {k} times", "{e} * {k}", "k", "times{k}"),
}
# measures of s: name -> (phrase, code, constant kind, name)
MEASURES = {
    "count": ("the number of times '{a}' occurs in s", "s.count('{a}')", "a", "count_{a}"),
    "vowels": ("the number of vowels in s", "sum(1 for c in s if c in 'aeiouAEIOU')", None, "count_vowels"),
    "words": ("the number of words in s", "len(s.split())", None, "count_words"),
    "split": ("the list of the words in s", "s.split()", None, "words"),
    "starts": ("whether s starts with '{a}'", "s.startswith('{a}')", "a", "starts_with_{a}"),
    "ends": ("whether s ends with '{a}'", "s.endswith('{a}')", "a", "ends_with_{a}"),
    "palindrome": ("whether s reads the same backwards", "s == s[::-1]", None, "is_palindrome"),
    "longest": ("the longest word in s", "max(s.split(), key=len)", None, "longest_word"),
    "uppers": ("the number of upper case letters in s", "sum(1 for c in s if c.isupper())", None, "count_upper"),
    "digits": ("the digits in s", "''.join(c for c in s if c.isdigit())", None, "digits"),
    "length": ("the length of s", "len(s)", None, "length"),
}


def _string_structures():
    out = [("string", f"string|measure|{m}") for m in MEASURES]
    for t in TRANSFORMS:
        out.append(("string", f"string|{t}"))
    for t1, t2 in product(TRANSFORMS, TRANSFORMS):
        if t1 != t2 and {t1, t2} not in ({"upper", "lower"}, {"upper", "title"}, {"lower", "title"}):
            out.append(("string", f"string|{t1}|{t2}"))
    return out


def _letters(rng, n):
    return [chr(ord("a") + int(i)) for i in rng.choice(26, size=n, replace=False)]


def _string(structure: str, rng) -> Synth:
    parts = structure.split("|")[1:]
    if parts[0] == "measure":
        phrase, code, const, nm = MEASURES[parts[1]]
        a = _letters(rng, 1)[0] if const == "a" else None
        doc = f"Return {phrase.format(a=a)}."
        task = f"Write a function that returns {phrase.format(a=a).replace(' s', ' a string', 1)}."
        return Synth("string", structure, _safe_name(nm.format(a=a)), ("s",), doc, task, f"    return {code.format(a=a)}", "s")
    e, atom, phrases, names = "s", True, [], []
    for t in parts:
        phrase, code, const, nm = TRANSFORMS[t]
        a, b = _letters(rng, 2)
        k = int(rng.integers(2, 5))
        postfix = code.startswith("{e}.") or code.startswith("{e}[")
        e = code.format(e=e if atom or not postfix else f"({e})", a=a, b=b, k=k)
        atom = t != "repeat"
        phrases.append(phrase.format(a=a, b=b, k=k))
        names.append(nm.format(a=a, b=b, k=k))
    joined = " and ".join(phrases)
    doc = f"Return s {joined}."
    task = f"Write a function that returns a string {joined}."
    return Synth("string", structure, _safe_name("_".join(names)), ("s",), doc, task, f"    return {e}", "s")


# ---------------------------------------------------------------- pair family

# inner: name -> (phrase, code, needs parentheses when wrapped, name)
INNER = {
    "sum": ("the sum of a and b", "a + b", True, "add"),
    "diff": ("a minus b", "a - b", True, "subtract"),
    "prod": ("the product of a and b", "a * b", True, "multiply"),
    "max": ("the larger of a and b", "max(a, b)", False, "larger"),
    "min": ("the smaller of a and b", "min(a, b)", False, "smaller"),
    "mod": ("the remainder of a divided by b", "a % b", True, "remainder"),
    "div": ("a divided by b, rounded down", "a // b", True, "floor_divide"),
    "absdiff": ("the absolute difference of a and b", "abs(a - b)", False, "distance"),
}
# outer: name -> (phrase template on {inner}, code template on {c}, constant, name template)
OUTER = {
    "id": ("{inner}", "{c}", False, "{n}"),
    "square": ("the square of {inner}", "{p} ** 2", False, "{n}_squared"),
    "plus": ("{inner}, plus {k}", "{c} + {k}", True, "{n}_plus{k}"),
    "times": ("{k} times {inner}", "{k} * {p}", True, "{n}_times{k}"),
    "neg": ("the negative of {inner}", "-{p}", False, "{n}_negated"),
}


def _pair_structures():
    return [("pair", f"pair|{i}|{o}") for i, o in product(INNER, OUTER)]


def _pair(structure: str, rng) -> Synth:
    _, i, o = structure.split("|")
    phrase, code, paren, nm = INNER[i]
    ophrase, ocode, const, oname = OUTER[o]
    k = int(rng.integers(2, 10))
    p = f"({code})" if paren else code
    full = ophrase.format(inner=phrase, k=k)
    return Synth("pair", structure, oname.format(n=nm, k=k), ("a", "b"), f"Return {full}.",
                 f"Write a function that returns {full.replace('a and b', 'two numbers a and b', 1)}."
                 if "a and b" in full else f"Write a function that, given two numbers a and b, returns {full}.",
                 f"    return {ocode.format(c=code, p=p, k=k)}", "ab")


# ---------------------------------------------------------------- conditional family

CONDITIONS = {
    "even": ("even", "n % 2 == 0", None, "if_even"),
    "odd": ("odd", "n % 2 == 1", None, "if_odd"),
    "positive": ("positive", "n > 0", None, "if_positive"),
    "negative": ("negative", "n < 0", None, "if_negative"),
    "above": ("greater than {k}", "n > {k}", (1, 9), "if_above{k}"),
    "below": ("less than {k}", "n < {k}", (1, 9), "if_below{k}"),
    "multiple": ("a multiple of {k}", "n % {k} == 0", (3, 7), "if_multiple{k}"),
    "equal": ("equal to {k}", "n == {k}", (0, 9), "if_equal{k}"),
}
# values: name -> (phrase, code, constant kind)
VALUES = {
    "word": ("'{w}'", "'{w}'", "w"),
    "n": ("n", "n", None),
    "neg": ("minus n", "-n", None),
    "times": ("n times {k}", "n * {k}", "k"),
    "plus": ("n plus {k}", "n + {k}", "k"),
    "zero": ("0", "0", None),
}


def _conditional_structures():
    return [("conditional", f"conditional|{c}|{a}|{b}") for c, a, b in product(CONDITIONS, VALUES, VALUES)
            if not (a == b and a in ("n", "neg", "zero"))]


def _value(v, rng, avoid=None):
    phrase, code, const = VALUES[v]
    if const == "w":
        choices = [w for w in VALUE_WORDS if w != avoid]
        w = choices[int(rng.integers(len(choices)))]
        return phrase.format(w=w), code.format(w=w), w
    k = int(rng.integers(2, 10))
    return phrase.format(k=k), code.format(k=k), str(k)


def _conditional(structure: str, rng) -> Synth:
    _, c, a, b = structure.split("|")
    phrase, cond, rng_k, nm = CONDITIONS[c]
    k = int(rng.integers(rng_k[0], rng_k[1] + 1)) if rng_k else None
    pa, ca, ka = _value(a, rng)
    pb, cb, kb = _value(b, rng, avoid=ka)
    if ca == cb:  # e.g. n * 3 twice: make the two branches differ
        pb, cb, kb = _value(b, rng, avoid=ka)
        if ca == cb:
            pb, cb = "0", "0"
    full = f"{pa} if n is {phrase.format(k=k)}, otherwise {pb}"
    body = f"    if {cond.format(k=k)}:\n        return {ca}\n    return {cb}"
    hints = (k - 1, k, k + 1) if k is not None else (-1, 0, 1)
    return Synth("conditional", structure, f"choose_{a}_{b}_{nm.format(k=k)}", ("n",), f"Return {full}.",
                 f"Write a function that, given a number n, returns {full}.", body, "n", hints)


# ---------------------------------------------------------------- all families

FAMILIES = {"numeric": (_numeric_structures, _numeric), "string": (_string_structures, _string),
            "pair": (_pair_structures, _pair), "conditional": (_conditional_structures, _conditional)}
