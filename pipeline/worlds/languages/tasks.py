"""The language world's tasks: which splits each model trains on, each evaluation split's metric, the prompt
formats (translation, math) and the one-step math problems drawn from GSM8K calculator steps."""
from __future__ import annotations

import re

import numpy as np

from pipeline.errors import PipelineError


WORLD = "languages"
PRINTABLE = "".join(chr(c) for c in range(32, 127))
FORMAT_CHARS = set("=<>")


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
