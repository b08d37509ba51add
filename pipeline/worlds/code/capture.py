"""Tests for real standard-library functions, by capturing their behaviour: each candidate (a self-contained
module-level function: its free names are its parameters, locals and harmless builtins, see
corpus.SAFE_BUILTINS) is run, in the project's sandbox (pipeline.sandbox.harness.run_programs), on
argument tuples drawn from a fixed pool of literals; the calls that return (within a time limit) a value that
is a plain literal (None, bool, int, float, str, bytes and lists/tuples/dicts/sets of them, whose repr evaluates
back to an equal value) become `assert name(args) == value` lines.

The harness runs twice, in two sandboxed processes (so with two hash seeds); only calls that gave the same
value both times are kept, and functions using sets, hash() or id() are not candidates at all, so that a test
never depends on hash randomisation.  A function needs `min_tests` such calls with at least
`min_distinct_outputs` different values (so no constant body passes), else it is dropped.
"""
from __future__ import annotations

import ast
import json
import zlib
from collections import Counter

import numpy as np

from pipeline.errors import PipelineError

# Argument values (Python literals): numbers, strings, bytes, containers; each call evaluates them afresh.
VALUE_POOL = [
    "0", "1", "2", "3", "7", "10", "-1", "-5", "42", "100", "1000", "0.5", "2.5", "-1.5",
    "''", "'a'", "'abc'", "'Hello World'", "'hello_world'", "'  padded  '", "'a,b,c'", "'x.y.z'", "'123'",
    "'CamelCase'", "'foo bar baz'", "'a\\nb'", "'__init__'", "'%s=%d'",
    "b''", "b'abc'", "b'\\x00\\x01\\x02\\x03'", "b'hello world'",
    "[]", "[1, 2, 3]", "[3, 1, 2]", "['a', 'b']", "[(1, 2), (3, 4)]", "()", "(1, 2)", "('a', 1)",
    "{}", "{'a': 1, 'b': 2}", "None", "True", "False",
]

_HARNESS = r'''
import json, signal, sys

class _Timeout(BaseException):
    pass

def _alarm(signum, frame):
    raise _Timeout()

signal.signal(signal.SIGALRM, _alarm)
_MAX = MAX_REPR

def _canon(v, depth=0):
    if depth > 4:
        raise TypeError("too deep")
    t = type(v)
    if v is None or t in (bool, int, str, bytes):
        if t is int and abs(v) > 10 ** 15:
            raise TypeError("too large")
        return repr(v)
    if t is float:
        if v != v or v in (float("inf"), float("-inf")):
            raise TypeError("not finite")
        return repr(v)
    if t is list:
        return "[" + ", ".join(_canon(x, depth + 1) for x in v) + "]"
    if t is tuple:
        items = [_canon(x, depth + 1) for x in v]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if t is dict:
        return "{" + ", ".join(_canon(k, depth + 1) + ": " + _canon(x, depth + 1) for k, x in v.items()) + "}"
    if t in (set, frozenset):
        items = sorted(_canon(x, depth + 1) for x in v)
        inner = "{" + ", ".join(items) + "}"
        if t is set:
            return inner if items else "set()"
        return "frozenset(" + (inner if items else "") + ")"
    raise TypeError("not a literal")

for _fi, (_src, _name, _calls) in enumerate(FUNCS):
    _ns = {}
    try:
        exec(_src, _ns)
        _fn = _ns[_name]
    except BaseException:
        continue
    for _ci, _args_src in enumerate(_calls):
        try:
            _args = eval(_args_src)
            signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
            try:
                _v = _fn(*_args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            _c = _canon(_v)
            if len(_c) > _MAX or eval(_c) != _v or type(eval(_c)) is not type(_v):
                continue
            sys.stdout.write("@@CAP " + json.dumps([_fi, _ci, _c]) + "\n")
            sys.stdout.flush()
        except BaseException:
            continue
sys.stdout.write("@@DONE\n")
sys.stdout.flush()
'''


def _required_params(source: str) -> int:
    fn = ast.parse(source).body[0]
    a = fn.args
    positional = len(a.posonlyargs) + len(a.args)
    return positional - len(a.defaults)


def candidate_calls(fid: str, source: str, tries: int, seed: int) -> list[str]:
    """Argument tuples (as source) for one function: every pool value for one parameter, a seeded sample of
    combinations for more."""
    k = _required_params(source)
    if k == 0 or k > 3:
        return []
    rng = np.random.default_rng([seed, zlib.crc32(fid.encode())])
    if k == 1:
        combos = [(v,) for v in VALUE_POOL]
    else:
        seen, combos = set(), []
        for _ in range(tries * 4):
            c = tuple(VALUE_POOL[i] for i in rng.integers(0, len(VALUE_POOL), size=k))
            if c not in seen:
                seen.add(c)
                combos.append(c)
            if len(combos) >= tries:
                break
    return ["(" + ", ".join(c) + ("," if len(c) == 1 else "") + ")" for c in combos]


def _run(programs: list[str], limits) -> list[str]:
    """The output of each harness program; one retry of a program that did not run to its end, then a
    PipelineError (an empty capture would silently empty the CC-stdlib sets)."""
    from pipeline.sandbox.harness import run_programs

    def complete(r) -> bool:
        return r.passed and "@@DONE" in r.output and "[output truncated]" not in r.output

    results = run_programs([(p, "") for p in programs], limits, workers=2, progress=False,
                           desc="capturing stdlib behaviour")
    for i, r in enumerate(results):
        if not complete(r):
            r = run_programs([(programs[i], "")], limits, workers=1, progress=False)[0]
            if not complete(r):
                tail = " | ".join(r.output.strip().splitlines()[-3:])[:300]
                raise PipelineError(f"code world: a behaviour-capture program did not run to its end in the "
                                    f"sandbox (status {r.status}; {tail or 'no output'}); lower capture.chunk "
                                    f"or raise capture.timeout_s")
            results[i] = r
    return [r.output for r in results]


def _parse(output: str | None) -> dict:
    got = {}
    for line in (output or "").splitlines():
        if line.startswith("@@CAP "):
            try:
                fi, ci, c = json.loads(line[6:])
            except ValueError:
                continue
            got[(fi, ci)] = c
    return got


def capture(functions: list, cfg: dict, seed: int) -> dict[str, list[tuple[str, str]]]:
    """{function id: [(args source, value source), ...]} for the calls that returned a literal, the same in
    two sandboxed runs.  `functions`: PyFunction-like objects with id, source and the name in qualname."""
    from pipeline.sandbox.harness import SandboxLimits

    chunk = int(cfg.get("chunk", 40))
    limits = SandboxLimits(timeout_s=float(cfg.get("timeout_s", 60)), max_output_bytes=8 << 20,
                           max_file_bytes=16 << 20)
    jobs = []
    for f in functions:
        calls = candidate_calls(f.id, f.source, int(cfg["tries"]), seed)
        if calls:
            jobs.append((f, calls))
    chunks = [jobs[i:i + chunk] for i in range(0, len(jobs), chunk)]

    def program(part):
        funcs = [(f.source, f.qualname.split(".")[-1], calls) for f, calls in part]
        return (_HARNESS.replace("MAX_REPR", str(int(cfg.get("max_repr_chars", 80))))
                .replace("CALL_SECONDS", repr(float(cfg.get("call_seconds", 0.2))))
                .replace("FUNCS", repr(funcs)))

    programs = [program(part) for part in chunks]
    runs = [_run(programs, limits), _run(programs, limits)]
    out: dict[str, list[tuple[str, str]]] = {}
    for ci, part in enumerate(chunks):
        a, b = _parse(runs[0][ci]), _parse(runs[1][ci])
        for fi, (f, calls) in enumerate(part):
            agree = [(calls[k], a[(fi, k)]) for k in range(len(calls))
                     if (fi, k) in a and b.get((fi, k)) == a[(fi, k)]]
            if agree:
                out[f.id] = agree
    return out


def _kind(value_src: str) -> str:
    v = ast.literal_eval(value_src)
    return type(v).__name__


def _arg_kinds(args_src: str) -> tuple:
    return tuple(type(v).__name__ for v in ast.literal_eval(args_src))


def select_tests(fid: str, observed: list[tuple[str, str]], cfg: dict, seed: int) -> list[tuple[str, str]] | None:
    """Up to `tests_per_function` observed calls; None if fewer than `min_tests` calls or `min_distinct_outputs`
    values.  Calls whose argument types are each parameter's most common successful type (bool, None and float
    only where nothing else works) come first, so that `isleap(2)` is preferred to `isleap(False)`; among them
    new values first, in a seeded order."""
    if not observed:
        return None
    n_tests = int(cfg["tests_per_function"])
    kinds = [_arg_kinds(a) for a, _ in observed]
    modal = []
    for p in range(len(kinds[0])):
        counts = Counter(k[p] for k in kinds)
        plain = {k: c for k, c in counts.items() if k not in ("bool", "NoneType", "float")}
        pick = plain or counts
        modal.append(sorted(pick.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])
    typed = [o for o, k in zip(observed, kinds) if list(k) == modal]
    pool = typed if len(typed) >= int(cfg["min_tests"]) else list(observed)
    rng = np.random.default_rng([seed, zlib.crc32(fid.encode()), 1])
    order = [pool[i] for i in rng.permutation(len(pool))]
    chosen, values = [], set()
    for args, v in order:
        if len(chosen) >= n_tests:
            break
        if v not in values:
            chosen.append((args, v))
            values.add(v)
    for args, v in order:
        if len(chosen) >= n_tests:
            break
        if (args, v) not in chosen:
            chosen.append((args, v))
    if len(chosen) < int(cfg["min_tests"]) or len(values) < int(cfg["min_distinct_outputs"]):
        return None
    return chosen


def assert_lines(name: str, tests: list[tuple[str, str]]) -> str:
    """`assert name(args) == value` lines (args source is a tuple literal)."""
    lines = []
    for args, v in tests:
        inner = args[1:-1]
        if inner.endswith(","):
            inner = inner[:-1]
        lines.append(f"assert {name}({inner}) == {v}")
    return "\n".join(lines) + "\n"
