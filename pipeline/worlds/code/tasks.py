"""The code world's tasks: which splits each model trains on, each evaluation split's metric, the real benchmark
each test set holds under `eval_sets: benchmarks`, the characters the world writes, and the prompt formats of its
tasks (cc, t2c, c2t); `_rng`, the world's seeded draws."""
from __future__ import annotations

import zlib

import numpy as np

from pipeline.worlds.code.synthesis import Synth

WORLD = "code"
TASKS = ("cc", "t2c", "cc_stdlib", "c2t")
# D_C may also hold plain code (`composition.tasks.code`): code_train items as they are, the paper's D_C (a slice of
# mA's code data); format_train stays the four task formats
COMPOSITION_TASKS = TASKS + ("code", "cc_doc")
# cc_doc: a stdlib function (module level, with a docstring) in HumanEval's layout: prompt = its signature and
# docstring, target = the rest of its body. Real code, the layout of the benchmark's prompts; only D_C draws it
# (format_train keeps the four formats above, so builds without it are byte-identical to before).

# Which splits each model is meant to train on, and each evaluation split's metric (the lead's conf decides).
MODEL_DATA = {
    "vanilla": ["english_train"],                                        # the general small checkpoint
    "mB": ["english_train", "mb_code_train", "format_train"],            # general anchor, a little code
    "mA": ["code_train", "format_train"],                                # from vanilla, further trained on code
    "calm": ["composition_train"],                                       # D_C
    "skyline": ["code_train", "format_train"],                           # mB further trained on mA's code data
}
EVALUATION_METRICS = {
    "cc_test": "pass_at_k", "t2c_test": "pass_at_k", "cc_stdlib_test": "pass_at_k", "c2t_test": "chrf",
    "cc_dev": "pass_at_k", "t2c_dev": "pass_at_k", "cc_stdlib_dev": "pass_at_k", "c2t_dev": "chrf",
}
WRONG_BODY = "    return None"   # a completion every execution row's tests must reject

# eval_sets: benchmarks -> the real benchmark each test set then holds (pipeline/benchmarks/tasks.py builds the
# prompts and tests, with conf/benchmark/<name>.yaml's protocol: shots, exemplars, stops)
EVAL_SET_MODES = ("synthetic", "benchmarks")
BENCHMARK_SETS = {"cc_test": "humaneval", "t2c_test": "mbpp", "c2t_test": "codexglue"}
# benchmark_dev: {cc_dev: N, t2c_dev: M} replaces a dev split with the N benchmark items right after its test subset
# (a dev slice of the benchmark itself, for choices no test problem may make); without it the dev splits stay the
# synthetic stand-ins
BENCHMARK_DEV_SETS = {"cc_dev": "cc_test", "t2c_dev": "t2c_test"}
BENCHMARK_TITLES = {"humaneval": "HumanEval", "mbpp": "MBPP test", "codexglue": "CodeXGLUE Ruby test"}


def vocabulary(cfg: dict | None = None) -> list[str]:
    """Every character the world writes: newline and printable ASCII (32-126)."""
    return ["\n"] + [chr(c) for c in range(32, 127)]


# ---------------------------------------------------------------- formats

def cc_prompt(s: Synth, example: tuple[str, str]) -> str:
    return s.signature() + "\n" + s.docstring(example)


def t2c_prompt(task: str, name: str, example: tuple[str, str]) -> str:
    return f"# {task}\n# assert {name}({example[0]}) == {example[1]}\n"


def c2t_prompt(code: str) -> str:
    return f"Code:\n{code}\nSummary: "


def _entry(f) -> str:
    return f.qualname.split(".")[-1]


def _rng(seed: int, *keys) -> np.random.Generator:
    return np.random.default_rng([int(seed)] + [zlib.crc32(str(k).encode()) for k in keys])
