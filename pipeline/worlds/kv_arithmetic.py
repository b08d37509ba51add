"""World I: key-value arithmetic (paper §4.1, Table 1).

D_KV maps N_KV random lowercase strings (2-6 characters) to unique integers in
[1, N_KV].  Expressions (D_KV-EXP) join `n_terms` keys with operators.  Datasets:

- kv_subs:   "ab+cde="  -> "12+7"         (expression over keys -> values substituted)
- kv_math:   "ab+cde="  -> answer(12+7)   (expression over keys -> its value); with
             kv_math_format=scratchpad the target is "12+7=" + answer(12+7)
- num_math:  "12+7="    -> answer(12+7)   (substituted expression -> its value)
- general:   text of this world for the vanilla model (no key's value in it)

`answer` writes the integer in the configured format (`answer_format`: "plain",
or "reversed" = digits least-significant first, sign kept in front).  The
operator "x" is multiplication; every answer equals Python's evaluation of the
expression with "x" read as "*".

Splits: a held-in `held_in_fraction` of the keys; the composition data D_C uses
held-in keys only; the KV-MATH held-out test uses held-out keys only (so none of
its expressions is in D_C), the held-in test uses held-in expressions excluded
from D_C.  Everything is drawn from one seeded numpy Generator: same seed, same
bytes.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError
from pipeline.io import atomic_write_json, atomic_write_jsonl, read_jsonl

WORLD = "kv_arithmetic"
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
DIGITS = "0123456789"
# the paper's data protocol (§4.1), which the report holds a preset's data settings against
PAPER_DATA = {"n_keys": 25000, "n_terms": [3, 6], "operators": ["+", "-", "x"], "held_in_fraction": 0.2,
              "held_in_selection": "random", "answer_format": "plain", "kv_math_format": "direct"}


# ---------------------------------------------------------------- formats


def answer_text(value: int, fmt: str) -> str:
    s = str(abs(value))
    if fmt == "reversed":
        s = s[::-1]
    elif fmt != "plain":
        raise PipelineError(f"unknown answer_format {fmt!r}: use plain or reversed")
    return ("-" if value < 0 else "") + s


def parse_answer(text: str, fmt: str) -> int | None:
    text = text.strip()
    neg = text.startswith("-")
    digits = text[1:] if neg else text
    if not digits.isdigit():
        return None
    if fmt == "reversed":
        digits = digits[::-1]
    return -int(digits) if neg else int(digits)


def evaluate_expression(expr: str) -> int:
    """Python's evaluation of an expression over integers ('x' is multiplication; zero-padded numbers allowed)."""
    if not all(c in DIGITS + "+-x" for c in expr):
        raise ValueError(f"not a numeric expression: {expr!r}")
    expr = re.sub(r"(?<![0-9])0+(?=[0-9])", "", expr)  # "007" -> "7": Python rejects leading zeros
    return int(eval(expr.replace("x", "*"), {"__builtins__": {}}, {}))


def number_text(value: int, cfg: dict) -> str:
    """An operand as written in expressions: plain, or zero-padded to the width of N_KV."""
    if cfg.get("number_format", "plain") == "padded":
        return str(value).zfill(len(str(cfg["n_keys"])))
    if cfg.get("number_format", "plain") != "plain":
        raise PipelineError(f"unknown number_format {cfg['number_format']!r}: use plain or padded")
    return str(value)


def vocabulary(cfg: dict) -> list[str]:
    """Every character the world can write (the tokenizer's alphabet)."""
    chars = DIGITS + cfg["alphabet"] + "+-x=" + ";"
    seen: list[str] = []
    for c in chars:
        if c not in seen:
            seen.append(c)
    return seen


# ---------------------------------------------------------------- building


def _check(cfg: dict) -> None:
    lo, hi = cfg["key_length"]
    alphabet = cfg["alphabet"]
    if not (1 <= lo <= hi):
        raise PipelineError(f"key_length must be [lo, hi] with 1 <= lo <= hi, got {cfg['key_length']}")
    if len(set(alphabet)) != len(alphabet) or set(alphabet) & set(DIGITS + "+-x=;"):
        raise PipelineError("alphabet must be distinct characters, none of them a digit, operator, '=' or ';'")
    n_strings = sum(len(alphabet) ** L for L in range(lo, hi + 1))
    if cfg["n_keys"] > n_strings:
        raise PipelineError(
            f"n_keys={cfg['n_keys']} is more than the {n_strings} distinct strings of length {lo}-{hi} over {len(alphabet)} letters"
        )
    if cfg["n_keys"] < 2:
        raise PipelineError(f"n_keys must be >= 2, got {cfg['n_keys']}")
    t_lo, t_hi = cfg["n_terms"]
    if not (1 <= t_lo <= t_hi):
        raise PipelineError(f"n_terms must be [lo, hi] with 1 <= lo <= hi, got {cfg['n_terms']}")
    if not cfg["operators"] or set(cfg["operators"]) - set("+-x"):
        raise PipelineError(f"operators must be a non-empty subset of + - x, got {cfg['operators']}")
    n_held_in = round(cfg["n_keys"] * cfg["held_in_fraction"])
    if not (1 <= n_held_in < cfg["n_keys"]):
        raise PipelineError(f"held_in_fraction={cfg['held_in_fraction']} leaves no held-in or no held-out key")
    if cfg["composition_task"] not in ("kv_math", "kv_subs"):
        raise PipelineError(f"composition_task must be kv_math or kv_subs, got {cfg['composition_task']!r}")


def make_keys(cfg: dict, rng: np.random.Generator) -> list[str]:
    lo, hi = cfg["key_length"]
    alphabet = cfg["alphabet"]
    lengths = np.arange(lo, hi + 1)
    counts = np.array([len(alphabet) ** int(L) for L in lengths], dtype=float)
    # length drawn uniformly, but never more often than there are strings of that length
    keys: list[str] = []
    seen: set[str] = set()
    n = cfg["n_keys"]
    if n > 0.5 * counts.sum():  # dense: enumerate-and-sample is the only safe way
        pool = [
            "".join(t)
            for L in lengths
            for t in np.array(np.meshgrid(*[list(alphabet)] * int(L), indexing="ij")).reshape(int(L), -1).T
        ]
        idx = rng.choice(len(pool), size=n, replace=False)
        return [pool[i] for i in idx]
    while len(keys) < n:
        L = int(rng.choice(lengths))
        k = "".join(rng.choice(list(alphabet), size=L))
        if k not in seen:
            seen.add(k)
            keys.append(k)
    return keys


def held_in_first(keys: list[str], kv: dict, n_held_in: int, selection: str) -> list[str]:
    """Reorder keys so that the first n_held_in are the held-in ones.

    random:      the first n_held_in of the (already random) key order.
    digit_cover: greedily, in that random order, keys whose values bring a (place, digit) pair not yet
                 covered, then the rest in order: every digit the values can have in each place appears
                 among the held-in values as far as n_held_in allows.  At the paper's scale (5K held-in
                 keys) a random 20% covers every pair; with 20 held-in keys it does not, and the
                 composition never sees e.g. a value ending in 7 (docs/table1-calibration-log.md).
    Uses no random draws, so every other dataset of the world is the same bytes either way."""
    if selection == "random":
        return list(keys)
    if selection != "digit_cover":
        raise PipelineError(f"held_in_selection must be random or digit_cover, got {selection!r}")

    def pairs(k):
        return {(place, d) for place, d in enumerate(reversed(str(kv[k])))}

    chosen, covered = [], set()
    for k in keys:
        new = pairs(k) - covered
        if new and len(chosen) < n_held_in:
            chosen.append(k)
            covered |= new
    picked = set(chosen)
    rest = [k for k in keys if k not in picked]
    fill = n_held_in - len(chosen)
    return chosen + rest[:fill] + rest[fill:]


def _expressions(keys: list[str], n: int, cfg: dict, rng: np.random.Generator, exclude: set = frozenset()) -> list[tuple]:
    """n expressions as (key tuple, operator tuple), distinct while the space allows, none in `exclude`."""
    t_lo, t_hi = cfg["n_terms"]
    ops = list(cfg["operators"])
    space = sum(len(keys) ** t * len(ops) ** (t - 1) for t in range(t_lo, t_hi + 1))
    distinct = n <= 0.5 * (space - len(exclude))
    out, seen = [], set(exclude)
    tries = 0
    while len(out) < n:
        t = int(rng.integers(t_lo, t_hi + 1))
        ks = tuple(keys[i] for i in rng.integers(0, len(keys), size=t))
        os_ = tuple(ops[i] for i in rng.integers(0, len(ops), size=t - 1))
        e = (ks, os_)
        tries += 1
        if e in seen and (distinct or e in exclude):
            if tries > 100 * n + 10_000:
                raise PipelineError(f"cannot draw {n} expressions outside the excluded ones: too few keys")
            continue
        if distinct:
            seen.add(e)
        out.append(e)
    return out


def _join(items, ops) -> str:
    s = str(items[0])
    for o, it in zip(ops, items[1:]):
        s += o + str(it)
    return s


def _example(e: tuple, kv: dict, task: str, fmt: str, kv_math_format: str = "direct", numtext=str) -> dict:
    ks, ops = e
    kexpr = _join(ks, ops)
    nexpr = _join([numtext(kv[k]) for k in ks], ops)
    value = evaluate_expression(nexpr)
    if task == "kv_subs":
        return {"prompt": kexpr + "=", "target": nexpr}
    if task == "kv_math":
        if kv_math_format == "scratchpad":  # write the substituted expression, then its value
            return {"prompt": kexpr + "=", "target": nexpr + "=" + answer_text(value, fmt)}
        return {"prompt": kexpr + "=", "target": answer_text(value, fmt)}
    if task == "num_math":
        return {"prompt": nexpr + "=", "target": answer_text(value, fmt)}
    raise ValueError(task)


def build(cfg: dict, out_dir: str | Path, seed: int) -> dict:
    """Write the world's datasets under out_dir; returns a summary."""
    _check(cfg)
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    keys = make_keys(cfg, rng)
    values = (rng.permutation(cfg["n_keys"]) + 1).tolist()
    kv = dict(zip(keys, values))
    n_held_in = round(cfg["n_keys"] * cfg["held_in_fraction"])
    ordered = held_in_first(keys, kv, n_held_in, cfg.get("held_in_selection", "random"))
    held_in = ordered[:n_held_in]
    held_out = ordered[n_held_in:]
    held_in_set = set(held_in)
    fmt = cfg["answer_format"]
    sizes = cfg["sizes"]

    def numtext(v: int) -> str:
        return number_text(v, cfg)


    # tests first, so that training sets can exclude them
    subs_test = _expressions(keys, sizes["test"], cfg, rng)
    math_test_out = _expressions(held_out, sizes["test"], cfg, rng)
    math_test_in = _expressions(held_in, sizes["test_held_in"], cfg, rng)
    subs_train = _expressions(keys, sizes["kv_subs_train"], cfg, rng, exclude=set(subs_test))
    comp_train = _expressions(held_in, sizes["composition_train"], cfg, rng, exclude=set(math_test_in))

    # NUM-MATH: the same expression shapes over integers in [1, N_KV] (any, not only D_KV's)
    numbers = [numtext(v) for v in range(1, cfg["n_keys"] + 1)]  # built once: num_exprs runs once per general row

    def num_exprs(n, exclude=frozenset()):
        return _expressions(numbers, n, cfg, rng, exclude=exclude)

    num_test = num_exprs(sizes["test"])
    num_train = num_exprs(sizes["num_math_train"], exclude=set(num_test))
    ident = {numtext(v): v for v in range(1, cfg["n_keys"] + 1)}

    # general text of this world for the vanilla model: expressions over random
    # key-like strings and over numbers, with or without '=' and an answer over
    # numbers; never a key of D_KV next to its value.
    gen_rows = []
    g = cfg["general"]
    n_gen = sizes["general_train"]
    lo, hi = cfg["key_length"]
    n_strings = sum(len(cfg["alphabet"]) ** L for L in range(lo, hi + 1))
    fake_cfg = dict(cfg, n_keys=min(max(cfg["n_keys"], 50), n_strings))
    fake_keys = _non_keys(make_keys(fake_cfg, rng), set(keys))
    for i in range(n_gen):
        r = rng.random()
        if r < g["key_expressions"]:
            e = _expressions(fake_keys, 1, cfg, rng)[0]
            gen_rows.append({"prompt": "", "target": _join(*e)})
        elif r < g["key_expressions"] + g["number_expressions"]:
            e = num_exprs(1)[0]
            gen_rows.append({"prompt": "", "target": _join(*e)})
        else:
            e = num_exprs(1)[0]
            ex = _example(e, ident, "num_math", fmt, numtext=numtext)
            gen_rows.append({"prompt": "", "target": ex["prompt"] + ex["target"]})

    kmf = cfg["kv_math_format"]
    if kmf not in ("direct", "scratchpad"):
        raise PipelineError(f"kv_math_format must be direct or scratchpad, got {kmf!r}")

    def rows(exprs, table, task):
        return [_example(e, table, task, fmt, kmf, numtext) | {"keys": list(e[0])} for e in exprs]

    comp_task = cfg["composition_task"]
    files = {
        "d_kv.jsonl": [{"key": k, "value": v, "held_in": k in held_in_set} for k, v in kv.items()],
        "general_train.jsonl": gen_rows,
        "kv_subs_train.jsonl": rows(subs_train, kv, "kv_subs"),
        "num_math_train.jsonl": [_example(e, ident, "num_math", fmt, numtext=numtext) for e in num_train],
        "composition_train.jsonl": rows(comp_train, kv, comp_task),
        "kv_subs_test.jsonl": rows(subs_test, kv, "kv_subs"),
        "num_math_test.jsonl": [_example(e, ident, "num_math", fmt, numtext=numtext) for e in num_test],
        "kv_math_test.jsonl": rows(math_test_out, kv, "kv_math"),
        "kv_math_held_in_test.jsonl": rows(math_test_in, kv, "kv_math"),
    }
    if cfg.get("kv_listing_in_mA", False):
        listing = [{"prompt": k + "=", "target": numtext(v), "keys": [k]} for k, v in kv.items()]
        files["kv_subs_train.jsonl"] = files["kv_subs_train.jsonl"] + listing * int(cfg["kv_listing_repeats"])
    for name, r in files.items():
        atomic_write_jsonl(out / name, r)
    summary = {
        "world": WORLD,
        "seed": seed,
        "n_keys": cfg["n_keys"],
        "n_held_in": n_held_in,
        "held_in_selection": cfg.get("held_in_selection", "random"),
        "composition_task": comp_task,
        "answer_format": fmt,
        "kv_math_format": kmf,
        "number_format": cfg.get("number_format", "plain"),
        "vocabulary": "".join(vocabulary(cfg)),
        "max_chars": max(len(r["prompt"]) + len(r["target"]) for rs in files.values() for r in rs if "prompt" in r),
        "files": {k: len(v) for k, v in files.items()},
    }
    atomic_write_json(out / "summary.json", summary)
    return summary


def _non_keys(strings: list[str], keys: set[str]) -> list[str]:
    """Key-like random strings that are not keys of D_KV (all of them if every string is a key)."""
    return [k for k in strings if k not in keys] or strings


def random_prefixes(cfg: dict, n: int, seed: int, data_dir: str | Path | None = None,
                    pool: int | None = None) -> list[str]:
    """n prompt prefixes shaped like a KV-MATH prompt ("qz+abcd=") over random strings that
    carry no value: shifts a model's NUM-MATH inputs to the offsets where they sit in a
    scratchpad KV-MATH answer, without teaching it anything about D_KV.  With data_dir (the
    world's built data), the strings exclude D_KV's keys, so no key string appears at all.
    The strings are drawn from a pool of `pool` random strings (None: as many as D_KV has keys, at least 50): a
    model trained on a small pool can learn those strings rather than to ignore any string before the numbers."""
    rng = np.random.default_rng(seed)
    lo, hi = cfg["key_length"]
    n_strings = sum(len(cfg["alphabet"]) ** L for L in range(lo, hi + 1))
    if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool < 1):
        raise PipelineError(f"prefix_pool must be a positive integer (random strings to draw prefixes from), not {pool!r}")
    size = pool if pool is not None else max(cfg["n_keys"], 50)
    fake = make_keys(dict(cfg, n_keys=min(size, n_strings)), rng)
    if data_dir is not None:
        fake = _non_keys(fake, {r["key"] for r in read_jsonl(Path(data_dir) / "d_kv.jsonl")})
    return [_join(*e) + "=" for e in _expressions(fake, n, dict(cfg, n_keys=len(fake)), rng)]


# ---------------------------------------------------------------- report


def report_lines(cfg: dict, summary: dict, world_cfg: dict | None = None) -> list[str]:
    """The world's settings a reader of Table 1 needs (under the table)."""
    lines = [
        f"D_KV: {cfg['n_keys']} keys of {cfg['key_length'][0]}-{cfg['key_length'][1]} characters, values a permutation "
        f"of 1..{cfg['n_keys']}; expressions of {cfg['n_terms'][0]}-{cfg['n_terms'][1]} keys over {' '.join(cfg['operators'])}",
        f"answer format: `{cfg['answer_format']}`"
        + (" (answer digits least-significant first)" if cfg["answer_format"] == "reversed" else "")
        + f"; numbers `{cfg.get('number_format', 'plain')}`",
    ]
    if cfg.get("kv_math_format", "direct") == "scratchpad":
        lines.append("KV-Arithmetic format: `scratchpad`: the target is the substituted expression, `=`, then the value "
                     "(e.g. `ab+cd=` -> `12+34=64`); exact match on all of it")
    else:
        lines.append("KV-Arithmetic format: `direct`: the target is the value only (the paper's format)")
    lines.append(
        f"composition data D_C: `{cfg['composition_task']}` over the held-in {summary['n_held_in']} keys "
        f"({100 * cfg['held_in_fraction']:.0f}%, chosen `{summary.get('held_in_selection', 'random')}`); "
        f"KV-Arithmetic (held-out keys) uses only keys outside them")
    departures = [f"{k} {_setting(cfg[k])} (paper {_setting(v)})" for k, v in PAPER_DATA.items() if cfg.get(k) != v]
    lines.append("departs from the paper's data protocol (§4.1): " + ("; ".join(departures) or "nowhere")
                 + "; models: small ones trained here, not PaLM2")
    return lines


def _setting(value) -> str:
    if isinstance(value, list):
        return "-".join(map(str, value)) if all(isinstance(v, int) for v in value) else " ".join(value)
    return str(value)
