"""The code world's training items as rows: synthesized training functions, plain code rows and task rows (the
formats of format_train and D_C)."""
from __future__ import annotations

from collections import Counter

import numpy as np

import pipeline.worlds.code.synthesis as synthesis
from pipeline.errors import PipelineError
from pipeline.worlds.code.corpus import first_sentence
from pipeline.worlds.code.near_copies import code_tokens
from pipeline.worlds.code.tasks import c2t_prompt, cc_prompt, t2c_prompt


def _synth_training(structures: list[str], n: int, rng: np.random.Generator, bench_code, bench_prose,
                    exclusion: Counter) -> list[tuple[synthesis.Synth, tuple[str, str]]]:
    """n synthesized training functions (structure drawn uniformly, then constants), each with one example."""
    out, seen = [], set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 20 * n + 100:
            raise PipelineError(f"code world: cannot draw {n} distinct synthesized functions")
        st = structures[int(rng.integers(len(structures)))]
        drawn = synthesis.draw(st, rng, 2)
        if drawn is None:
            continue
        s, tests = drawn
        code = s.code(tests[0])
        if code in seen:
            continue
        seen.add(code)
        if bench_code.hit(code_tokens(code)) or bench_prose.hit_prose(s.doc) or bench_prose.hit_prose(s.task):
            exclusion["synthetic_train_benchmark_near_copy"] += 1
            continue
        out.append((s, tests[0]))
    return out


def _plain_row(item) -> dict:
    """A code_train item as a row of plain code (no prompt: the loss is on all of it)."""
    kind, obj = item
    if kind == "stdlib":
        return {"prompt": "", "target": obj.source, "source": "stdlib", "id": obj.id}
    s, example, t2c_style = obj
    text = t2c_prompt(s.task, s.name, example) + s.signature() + "\n" + s.body if t2c_style else s.code(example)
    return {"prompt": "", "target": text, "source": "synthetic", "id": f"synthetic:{s.name}",
            "structure": s.structure}


def humaneval_layout(f) -> tuple[str, str] | None:
    """(signature and docstring, rest of the body) of a stdlib function, as HumanEval splits its problems into
    prompt and canonical solution; None for a method, a function without a docstring or without a body after it."""
    import ast

    if f.is_method or not f.docstring:
        return None
    try:
        node = ast.parse(f.source).body[0]
    except SyntaxError:
        return None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(node.body) < 2:
        return None
    lines = f.source.split("\n")
    head, rest = "\n".join(lines[:node.body[0].end_lineno]) + "\n", "\n".join(lines[node.body[0].end_lineno:])
    return (head, rest) if rest.strip() else None


def _task_row(task: str, item) -> dict | None:
    """A code_train item rendered in a task format, or as plain code (`code`); None if it cannot be asked that way."""
    if task == "code":
        return {**_plain_row(item), "task": "code"}
    kind, obj = item
    if task == "cc_doc":
        split = humaneval_layout(obj) if kind == "stdlib" else None
        return None if split is None else {"prompt": split[0], "target": split[1], "task": "cc_doc", "id": obj.id}
    if task in ("cc", "t2c"):
        if kind != "synthetic":
            return None
        s, example = obj[:2]
        if task == "cc":
            return {"prompt": cc_prompt(s, example), "target": s.body, "task": "cc", "id": f"synthetic:{s.name}",
                    "structure": s.structure}
        return {"prompt": t2c_prompt(s.task, s.name, example), "target": s.signature() + "\n" + s.body,
                "task": "t2c", "id": f"synthetic:{s.name}", "structure": s.structure}
    if kind != "stdlib":
        return None
    f = obj
    if task == "cc_stdlib":
        if not f.last or "\n\n" in f.last:
            return None
        return {"prompt": f.prefix, "target": f.last, "task": "cc_stdlib", "id": f.id}
    s = first_sentence(f.docstring)
    if not s or not f.code_without_docstring:
        return None
    return {"prompt": c2t_prompt(f.code_without_docstring), "target": s, "task": "c2t", "id": f.id}
