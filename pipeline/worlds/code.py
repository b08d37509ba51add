"""World III: code (paper §4.3, Table 4), the data side.

`build(cfg, out_dir, seed)` writes the code world's splits (JSONL rows {prompt, target, ...}; an empty prompt is
plain text, loss on every token) from this interpreter's standard library (code_corpus.py), synthesized functions
(code_synth.py), GSM8K *train* questions and the stdlib's docstring prose:
  english_train, code_train, mb_code_train   plain text: the vanilla checkpoint's and mB's English, mA's code,
                                             "a little code" for mB
  format_train                               rows of each task format (cc, t2c, cc_stdlib, c2t), for mA and mB
  composition_train                          D_C: `composition.fraction` (paper: 7%) of code_train, as task rows
  cc_*, t2c_*, cc_stdlib_*, c2t_* test/dev   CPU stand-ins for HumanEval, MBPP (pass_at_k, the rows carry `test`
                                             and `entry_point`) and CodeXGLUE (chrf)
`eval_sets: benchmarks` replaces the test sets with the real benchmarks (pipeline/benchmarks/tasks.py,
`benchmark_sets` below); `dialect: {seed: k}` writes every Python text in a renamed dialect (code_dialect.py;
execution rows carry `rename_back`). No benchmark item and no held-out function is in any training split (near
copies too: code_corpus.NearCopyIndex; summary `exclusion` counts what each check removed). Characters: printable
ASCII and newline (`vocabulary`). `eval_seed` fixes the evaluation rows, `seed` draws the training samples: same cfg
and seed, same bytes on the same Python version (summary.json records it and a hash of the files read).

What each split and task holds, how each departs from the paper, and what was measured on the data:
docs/world-code.md.
"""
from __future__ import annotations

import json
import statistics
import sys
import zlib
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError
from pipeline.io import atomic_write_json, atomic_write_jsonl
from pipeline.worlds import code_capture, code_synth
from pipeline.benchmarks.tasks import MBPP_TASK_OPENING
from pipeline.worlds.code_dialect import Dialect
from pipeline.worlds.code_corpus import (NearCopyIndex, benchmark_indexes, code_tokens, doc_paragraphs,
                                         first_sentence, printable, stdlib_corpus, words)

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


def cc_prompt(s: code_synth.Synth, example: tuple[str, str]) -> str:
    return s.signature() + "\n" + s.docstring(example)


def t2c_prompt(task: str, name: str, example: tuple[str, str]) -> str:
    return f"# {task}\n# assert {name}({example[0]}) == {example[1]}\n"


def c2t_prompt(code: str) -> str:
    return f"Code:\n{code}\nSummary: "


def _entry(f) -> str:
    return f.qualname.split(".")[-1]


# ---------------------------------------------------------------- checks


def _check(cfg: dict) -> None:
    for key in ("benchmarks_dir", "eval_seed", "max_function_chars", "near_copy", "english", "synthetic",
                "capture", "c2t", "sizes", "mb", "composition"):
        if key not in cfg:
            raise PipelineError(f"code world: cfg lacks `{key}` (conf/world/code.yaml's worlds.code.data lists every key)")
    mode = cfg.get("eval_sets", "synthetic")
    if mode not in EVAL_SET_MODES:
        raise PipelineError(f"code world: eval_sets must be one of {', '.join(EVAL_SET_MODES)}, got {mode!r}")
    limits = cfg.get("benchmark_limits") or {}
    if not isinstance(limits, dict) or set(limits) - set(BENCHMARK_SETS) or any(
            v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1) for v in limits.values()):
        raise PipelineError(f"code world: benchmark_limits must map some of {', '.join(BENCHMARK_SETS)} to a positive "
                            f"number of items or null (all), got {limits!r}")
    offsets = cfg.get("benchmark_offsets") or {}
    if not isinstance(offsets, dict) or set(offsets) - set(BENCHMARK_SETS) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in offsets.values()):
        raise PipelineError(f"code world: benchmark_offsets must map some of {', '.join(BENCHMARK_SETS)} to a number "
                            f"of leading items to skip (>= 0), got {offsets!r}")
    tasks = cfg["composition"]["tasks"]
    if set(tasks) - set(COMPOSITION_TASKS) or not tasks or any(float(v) < 0 for v in tasks.values()) \
            or sum(float(v) for v in tasks.values()) <= 0:
        raise PipelineError(f"code world: composition.tasks must give non-negative shares of {COMPOSITION_TASKS}, "
                            f"got {tasks}")
    mods = cfg.get("stdlib_modules")
    if mods is not None and (not isinstance(mods, list) or not mods or not all(isinstance(m, str) for m in mods)):
        raise PipelineError(f"code world: stdlib_modules must be null or a non-empty list of module names, got {mods!r}")
    fams = cfg["synthetic"]["families"]
    if not fams or set(fams) - set(code_synth.FAMILIES):
        raise PipelineError(f"code world: synthetic.families must be a non-empty subset of "
                            f"{list(code_synth.FAMILIES)}, got {fams}")
    if not 0 < float(cfg["composition"]["fraction"]) <= 1 or not 0 <= float(cfg["mb"]["code_fraction"]) <= 1:
        raise PipelineError("code world: composition.fraction must be in (0, 1] and mb.code_fraction in [0, 1]")
    dev = cfg.get("benchmark_dev") or {}
    if not isinstance(dev, dict) or set(dev) - set(BENCHMARK_DEV_SETS) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in dev.values()):
        raise PipelineError(f"code world: benchmark_dev must map some of {', '.join(BENCHMARK_DEV_SETS)} to a positive "
                            f"number of items, got {dev!r}")
    for split in dev:
        test = BENCHMARK_DEV_SETS[split]
        if mode != "benchmarks" or limits.get(test) is None:
            raise PipelineError(f"code world: benchmark_dev.{split} takes the items after {test}'s subset: it needs "
                                f"eval_sets: benchmarks and a benchmark_limits.{test}")
    bpb = cfg.get("bits_per_byte")
    if bpb is not None:
        if not isinstance(bpb, dict) or set(bpb) - {"code", "prose"} or not isinstance(bpb.get("code", False), bool) \
                or isinstance(bpb.get("prose", 0), bool) or not isinstance(bpb.get("prose", 0), int) or bpb.get("prose", 0) < 0:
            raise PipelineError(f"code world: bits_per_byte must be {{code: true|false, prose: <number of texts>}}, got {bpb!r}")
        if bpb.get("code") and mode != "benchmarks":
            raise PipelineError("code world: bits_per_byte.code scores the benchmarks' reference solutions: it needs "
                                "eval_sets: benchmarks")
    _dialect(cfg)   # a bad dialect block fails here, in one line


def _rng(seed: int, *keys) -> np.random.Generator:
    return np.random.default_rng([int(seed)] + [zlib.crc32(str(k).encode()) for k in keys])


def _normal_sentence(s: str) -> str:
    return " ".join(words(s))


# ---------------------------------------------------------------- evaluation side (cached: seed-independent)


def _eval_key(cfg: dict) -> str:
    keys = ("benchmarks_dir", "humaneval_file", "eval_seed", "max_function_chars", "near_copy", "english",
            "synthetic", "capture", "c2t", "verify_in_sandbox", "stdlib_modules")
    sizes = {k: v for k, v in cfg["sizes"].items() if k.endswith(("_test", "_dev"))}
    return json.dumps({**{k: cfg.get(k) for k in keys}, "sizes": sizes}, sort_keys=True)


def _verify(rows: list[dict]) -> list[tuple[bool, bool]]:
    """(reference passes, wrong completion fails) for each execution row, in the sandbox."""
    from pipeline.benchmarks.sandbox import run_programs

    jobs = []
    for r in rows:
        jobs.append((r["prompt"] + r["target"], r["test"]))
        jobs.append((r["prompt"] + _wrong(r), r["test"]))
    res = run_programs(jobs, workers=2, progress=False, desc="verifying code world references")
    return [(res[2 * i].passed, not res[2 * i + 1].passed) for i in range(len(rows))]


def _wrong(r: dict) -> str:
    return WRONG_BODY if r["task"] != "t2c" else f"def {r['entry_point']}(*args):\n{WRONG_BODY}"


def _verify_synthetic(rows: list[dict]) -> list[tuple[bool, bool]]:
    """(reference passes, wrong completion fails) for synthesized rows, run in this process: the code and the
    tests are this module's own (code_synth), with a few builtins; tests check a sample in the sandbox."""
    out = []
    for r in rows:
        results = []
        for completion in (r["target"], _wrong(r)):
            try:
                exec(r["prompt"] + completion + "\n" + r["test"], {"__builtins__": dict(code_synth._SAFE)})
                results.append(True)
            except Exception:
                results.append(False)
        out.append((results[0], not results[1]))
    return out


@lru_cache(maxsize=4)
def _evaluation_side(key: str) -> dict:
    cfg = json.loads(key)
    modules = cfg.get("stdlib_modules")
    functions, other_docs, corpus_info = stdlib_corpus(None, tuple(modules) if modules is not None else None)
    bench_code, bench_prose, bench_counts = benchmark_indexes(cfg)
    max_chars = int(cfg["max_function_chars"])
    exclusion = Counter()
    bench_hits = Counter()

    def benchmark_hit(tokens, prose: list[str]) -> str | None:
        h = bench_code.hit(list(tokens))
        if h is None:
            for p in prose:
                h = bench_prose.hit_prose(p) if p else None
                if h:
                    break
        if h:
            bench_hits[h.split(":")[0]] += 1
        return h

    # --- stdlib functions: eligibility and benchmark exclusion
    usable, excluded_bench = [], set()
    for f in functions:
        if not printable(f.source):
            exclusion["stdlib_characters"] += 1
            continue
        if benchmark_hit(f.tokens, [f.docstring or ""]):
            exclusion["stdlib_benchmark_near_copy"] += 1
            excluded_bench.add(f.id)
            continue
        usable.append(f)

    # --- held-out stdlib functions for CC-stdlib: captured behaviour, verified in the sandbox
    cap = cfg["capture"]
    candidates = [f for f in usable if f.self_contained and not f.order_sensitive and f.last and f.n_params > 0
                  and len(f.source) <= max_chars and "\n\n" not in f.last and not f.decorated]
    observed = code_capture.capture(candidates, cap, int(cfg["eval_seed"]))
    cc_rows = []
    for f in candidates:
        tests = code_capture.select_tests(f.id, observed.get(f.id, []), cap, int(cfg["eval_seed"]))
        if tests is None:
            continue
        cc_rows.append({"prompt": f.prefix, "target": f.last, "test": code_capture.assert_lines(_entry(f), tests),
                        "entry_point": _entry(f), "task": "cc_stdlib", "group": "stdlib", "id": f.id})
    n_captured = len(cc_rows)
    if cfg.get("verify_in_sandbox", True) and cc_rows:
        checks = _verify(cc_rows)
        if sum(ok for ok, _ in checks) < 0.8 * len(checks):  # a broken sandbox, not a few odd functions
            raise PipelineError(f"code world: only {sum(ok for ok, _ in checks)} of {len(checks)} CC-stdlib "
                                f"references pass their captured tests in the sandbox; is the sandbox working?")
        cc_rows = [r for r, (ok, rejects) in zip(cc_rows, checks) if ok and rejects]
    if not cc_rows and int(cfg["sizes"]["cc_stdlib_test"]) > 0:
        raise PipelineError("code world: no held-out stdlib function got captured tests (CC-stdlib would be empty)")
    order = _rng(cfg["eval_seed"], "cc_stdlib").permutation(len(cc_rows))
    cc_rows = [cc_rows[i] for i in order]
    sz = cfg["sizes"]
    n_t = min(int(sz["cc_stdlib_test"]), len(cc_rows))
    cc_stdlib = {"cc_stdlib_test": cc_rows[:n_t], "cc_stdlib_dev": cc_rows[n_t:n_t + int(sz["cc_stdlib_dev"])]}

    # --- held-out stdlib functions for C2T: a unique prose first sentence, a body that does something
    c = cfg["c2t"]
    taken = {r["id"] for rs in cc_stdlib.values() for r in rs}
    sentence_count = Counter(_normal_sentence(s) for f in functions for s in [first_sentence(f.docstring)] if s)
    c2t_pool = []
    for f in usable:
        s = first_sentence(f.docstring)
        if not s or f.id in taken or not f.code_without_docstring or len(f.code_without_docstring) > max_chars:
            continue
        n_words = len(s.split())
        body = f.code_without_docstring.split("\n", 1)[-1].strip()
        if not (int(c["min_words"]) <= n_words <= int(c["max_words"])) or sentence_count[_normal_sentence(s)] > 1:
            continue
        if body in ("pass", "...", "raise NotImplementedError", "raise NotImplementedError()") or "\n\n" in s:
            continue
        c2t_pool.append((f, s))
    order = _rng(cfg["eval_seed"], "c2t").permutation(len(c2t_pool))
    n_t, n_d = int(sz["c2t_test"]), int(sz["c2t_dev"])
    if len(c2t_pool) < n_t + n_d:
        raise PipelineError(f"code world: only {len(c2t_pool)} functions qualify for C2T, asked for {n_t + n_d}")
    picked = [c2t_pool[i] for i in order[:n_t + n_d]]
    c2t_rows = [{"prompt": c2t_prompt(f.code_without_docstring), "target": s, "task": "c2t", "group": "python",
                 "id": f.id} for f, s in picked]
    c2t = {"c2t_test": c2t_rows[:n_t], "c2t_dev": c2t_rows[n_t:]}

    # --- held out of training: identity, near-copy code, C2T references in any training text
    held = {r["id"] for rs in [*cc_stdlib.values(), *c2t.values()] for r in rs}
    by_id = {f.id: f for f in functions}
    nc = cfg["near_copy"]
    held_code = NearCopyIndex(int(nc["code_ngram"]), float(nc["code_threshold"]))
    for fid in sorted(held):
        held_code.add(fid, list(by_id[fid].tokens))
    held_prose = NearCopyIndex(int(nc["prose_ngram"]), 0.0, contain_short=True)
    for r in c2t_rows:
        held_prose.add_prose(r["id"], r["target"])

    train_functions, seen_tokens = [], set()
    for f in usable:
        if f.id in held:
            exclusion["stdlib_held_out"] += 1
            continue
        if len(f.source) > max_chars:
            exclusion["stdlib_longer_than_max_function_chars"] += 1
            continue
        toks = list(f.tokens)
        if held_code.hit(toks):
            exclusion["stdlib_near_copy_of_held_out"] += 1
            continue
        if f.docstring and held_prose.hit_prose(f.docstring):
            exclusion["stdlib_docstring_has_c2t_reference"] += 1
            continue
        key = "\x1f".join(toks) + "\x1e" + (f.docstring or "")
        if key in seen_tokens:
            exclusion["stdlib_duplicate"] += 1
            continue
        seen_tokens.add(key)
        train_functions.append(f)

    # --- synthesized functions: held-out structures (stratified by family), evaluation rows
    syn = cfg["synthetic"]
    fams = tuple(syn["families"])
    viable = code_synth.viable_structures(fams)
    n_tests, max_tests = int(syn["tests"]), int(syn["max_tests"])
    want = {k: int(sz[k]) for k in ("cc_test", "cc_dev", "t2c_test", "t2c_dev")}
    by_family: dict[str, list[str]] = {}
    for fam, st in viable:
        by_family.setdefault(fam, []).append(st)
    total_held = sum(want.values())
    held_structures: dict[str, list[str]] = {k: [] for k in want}
    rng = _rng(cfg["eval_seed"], "structures")
    shuffled = {fam: [sts[i] for i in rng.permutation(len(sts))] for fam, sts in by_family.items()}
    if total_held > 0.5 * len(viable):
        raise PipelineError(f"code world: {total_held} held-out structures asked for, of {len(viable)}: at most half")
    # each split takes its share of every family (largest remainder); a structure without tests or near a
    # benchmark item is still held out, and the family's next structure replaces it
    cursor = {fam: 0 for fam in shuffled}
    synth_eval: dict[str, list[dict]] = {k: [] for k in want}
    item_rng = _rng(cfg["eval_seed"], "synthetic items")
    for split, n in want.items():
        quota = {fam: n * len(sts) / len(viable) for fam, sts in shuffled.items()}
        counts = {fam: int(q) for fam, q in quota.items()}
        for fam in sorted(quota, key=lambda f: (-(quota[f] - counts[f]), f))[:n - sum(counts.values())]:
            counts[fam] += 1
        for fam in sorted(counts):
            got = 0
            while got < counts[fam] and cursor[fam] < len(shuffled[fam]):
                st = shuffled[fam][cursor[fam]]
                cursor[fam] += 1
                held_structures[split].append(st)
                drawn = code_synth.draw(st, item_rng, n_tests, max_tests, discriminate=True, families=fams)
                if drawn is None:
                    exclusion["synthetic_eval_no_tests"] += 1
                    continue
                s, tests = drawn
                task = "cc" if split.startswith("cc") else "t2c"
                prompt = cc_prompt(s, tests[0]) if task == "cc" else t2c_prompt(s.task, s.name, tests[0])
                if benchmark_hit(code_tokens(s.code()), [s.doc, s.task]):
                    exclusion["synthetic_eval_benchmark_near_copy"] += 1
                    continue
                target = s.body if task == "cc" else s.signature() + "\n" + s.body
                synth_eval[split].append({"prompt": prompt, "target": target,
                                          "test": code_synth.test_source(s.name, tests), "entry_point": s.name,
                                          "task": task, "group": s.family, "id": f"synthetic:{s.name}",
                                          "structure": st})
                got += 1
    rows = [r for rs in synth_eval.values() for r in rs]
    bad = [r["id"] for r, (ok, rejects) in zip(rows, _verify_synthetic(rows)) if not (ok and rejects)]
    if bad:
        raise PipelineError(f"code world: synthesized evaluation rows fail their own tests: {bad[:5]}")
    held_all = {st for sts in held_structures.values() for st in sts}
    train_structures = [st for _, st in viable if st not in held_all]

    evaluation = {"cc_test": synth_eval["cc_test"], "cc_dev": synth_eval["cc_dev"],
                  "t2c_test": synth_eval["t2c_test"], "t2c_dev": synth_eval["t2c_dev"], **cc_stdlib, **c2t}

    # --- English units (the seed only samples them)
    eng = cfg["english"]
    lo, hi = int(eng["min_chars"]), int(eng["max_chars"])
    english: dict[str, list[str]] = {}
    if eng.get("gsm8k_train_questions", True):
        path = Path(cfg["benchmarks_dir"]).expanduser() / "gsm8k" / "train.jsonl"
        if not path.is_file():
            raise PipelineError(f"code world: GSM8K train questions missing: {path} (set benchmarks_dir, now "
                                f"{cfg['benchmarks_dir']!r}, or english.gsm8k_train_questions: false)")
        from pipeline.benchmarks.data import read_benchmark_jsonl

        english["gsm8k_train_questions"] = [" ".join(row["question"].split()) for row in read_benchmark_jsonl(path)]
    if eng.get("python_docstrings", True):
        docs = [d for _, d in other_docs] + [f.docstring for f in train_functions if f.docstring]
        english["python_docstrings"] = [p for d in docs for p in doc_paragraphs(d)]
    if not english:
        raise PipelineError("code world: english names no source (gsm8k_train_questions, python_docstrings)")
    english_pool: dict[str, list[str]] = {}
    seen_units = set()
    for source, units in english.items():
        kept = []
        for u in units:
            if not (lo <= len(u) <= hi) or not printable(u):
                exclusion["english_length_or_characters"] += 1
                continue
            if u in seen_units:
                exclusion["english_duplicate"] += 1
                continue
            seen_units.add(u)
            if bench_prose.hit_prose(u):
                bench_hits["english"] += 1
                exclusion["english_benchmark_near_copy"] += 1
                continue
            if held_prose.hit_prose(u):
                exclusion["english_has_c2t_reference"] += 1
                continue
            kept.append(u)
        english_pool[source] = kept

    return {"functions": train_functions, "structures": train_structures, "evaluation": evaluation,
            "english": english_pool, "exclusion": dict(sorted(exclusion.items())),
            "benchmark_hits": dict(sorted(bench_hits.items())), "benchmark_counts": bench_counts,
            "corpus": corpus_info, "n_viable_structures": len(viable),
            "held_structures": {k: len(v) for k, v in held_structures.items()},
            "cc_stdlib_candidates": {"self_contained": len(candidates), "with_captured_tests": n_captured,
                                     "verified": len(cc_rows)},
            "c2t_pool": len(c2t_pool), "excluded_benchmark_ids": sorted(excluded_bench),
            "bench_index": (bench_code, bench_prose)}


# ---------------------------------------------------------------- the real benchmarks (eval_sets: benchmarks)


def benchmark_files(cfg: dict) -> list[Path]:
    """The benchmark files build() reads (checked against their SHA256SUMS when read): HumanEval, MBPP and the
    CodeXGLUE Ruby test split (excluded from training; the evaluation sets under eval_sets: benchmarks), the Ruby
    train split when there is one (the C2T exemplars then come from it), GSM8K train (English units)."""
    from pipeline.worlds.code_corpus import benchmark_paths

    paths = list(benchmark_paths(cfg).values())
    ruby_train = Path(cfg["benchmarks_dir"]).expanduser() / "codexglue_code_to_text" / "ruby" / "train.jsonl"
    if cfg.get("eval_sets") == "benchmarks" and ruby_train.is_file():
        paths.append(ruby_train)
    if cfg["english"].get("gsm8k_train_questions", True):
        paths.append(Path(cfg["benchmarks_dir"]).expanduser() / "gsm8k" / "train.jsonl")
    return paths


def benchmark_sets(cfg: dict) -> dict[str, list[dict]]:
    """cc_test = HumanEval (0-shot), t2c_test = MBPP test (3-shot, [BEGIN]/[DONE]), c2t_test = CodeXGLUE Ruby
    test (3-shot): the items, prompts and tests of pipeline.benchmarks.tasks under conf/benchmark/<name>.yaml,
    read from the files benchmark_paths names (never the hub), the first `benchmark_limits[set]` items of each
    after the first `benchmark_offsets[set]` (default 0; e.g. a dev slice: HumanEval 41-80 beside a test subset of
    the first 40).
    Execution rows carry `program_prefix`: what precedes the completion in the program the sandbox runs (HumanEval:
    the prompt; MBPP: nothing, the completion is the whole program), and `test` (HumanEval: its check() and the
    call; MBPP: its test_list)."""
    from pipeline.benchmarks.config import load_benchmark_config
    from pipeline.benchmarks.errors import BenchmarkError
    from pipeline.benchmarks.tasks import build_task
    from pipeline.worlds.code_corpus import benchmark_paths

    paths = benchmark_paths(cfg)
    local = {"humaneval": {"local_file": str(paths["humaneval"])}, "mbpp": {"local_dir": str(paths["mbpp"])},
             "codexglue": {"local_dir": str(paths["codexglue_ruby_test"].parent.parent)}}
    limits = cfg.get("benchmark_limits") or {}
    offsets = cfg.get("benchmark_offsets") or {}
    sentinel = "\x00completion\x00"
    out = {}
    slices = [(split, name, offsets.get(split, 0), limits.get(split)) for split, name in BENCHMARK_SETS.items()]
    for dev, n in (cfg.get("benchmark_dev") or {}).items():   # the items right after the test subset
        test = BENCHMARK_DEV_SETS[dev]
        slices.append((dev, BENCHMARK_SETS[test], offsets.get(test, 0) + limits[test], n))
    for split, name, skip, limit in slices:
        bcfg = load_benchmark_config(name)
        task = build_task({**bcfg, "data": {**local[name], "hub_id": None}})
        try:
            items = task.items(None if limit is None else skip + limit)[skip:]
        except BenchmarkError as e:
            raise PipelineError(f"code world: {split} from {name}: {e}") from None
        if not items:
            raise PipelineError(f"code world: {split} from {name}: benchmark_offsets {skip} leaves no item")
        rows = []
        for item in items:
            row = {"prompt": item.prompt, "task": split.split("_")[0], "group": name if name != "codexglue" else
                   bcfg["language"], "id": f"{name}:{item.id}" if name != "humaneval" else item.id}
            if name == "codexglue":
                row["target"] = item.reference
            else:
                prefix, test = task.program_and_tests(item, "")
                program, _ = task.program_and_tests(item, sentinel)
                if program != prefix + sentinel:  # the sandbox runs program_prefix + completion
                    raise PipelineError(f"code world: {name} item {item.id}: its program is not a prefix + the completion")
                row.update(target=item.reference, test=test, program_prefix=prefix)
                if item.extra.get("entry_point"):
                    row["entry_point"] = item.extra["entry_point"]
            rows.append(row)
        out[split] = rows
    return out


def bits_per_byte_sets(cfg: dict, real: dict[str, list[dict]], english_pool: dict[str, list[str]],
                       english_rows: list[dict]) -> dict[str, list[dict]]:
    """bits_per_byte: {code: true, prose: N} -> texts whose bits per byte a model is scored on (metric
    bits_per_byte; rows with an empty prompt: the whole text is scored):
      bpb_code_test   the reference solution of every test item: HumanEval's prompt + canonical solution (the
                      whole function), MBPP's reference code (the program its tests run), group = the benchmark
      bpb_prose_test  N GSM8K train questions (everyday English prose) that english_train does not hold, drawn
                      with eval_seed (held out of every training split: no model here trains on them)"""
    spec = cfg.get("bits_per_byte") or {}
    out = {}
    if spec.get("code"):
        rows = []
        for split in ("cc_test", "t2c_test"):
            for r in real[split]:
                text = r["program_prefix"] + r["target"]
                rows.append({"prompt": "", "target": text, "id": r["id"], "group": BENCHMARK_SETS[split],
                             "task": "bpb_code"})
        out["bpb_code_test"] = rows
    if spec.get("prose"):
        used = {r["target"] for r in english_rows}
        pool = [u for u in english_pool.get("gsm8k_train_questions", []) if u not in used]
        n = int(spec["prose"])
        if len(pool) < n:
            raise PipelineError(f"code world: bits_per_byte.prose asks for {n} held-out GSM8K questions, {len(pool)} "
                                f"are left (english.gsm8k_train_questions must be true)")
        picked = sorted(_rng(cfg["eval_seed"], "bpb_prose").choice(len(pool), size=n, replace=False))
        out["bpb_prose_test"] = [{"prompt": "", "target": pool[i], "id": f"gsm8k-train-question:{i}",
                                  "group": "english_prose", "task": "bpb_prose"} for i in picked]
    return out


# ---------------------------------------------------------------- the dialect (data.dialect: {seed})


def _dialect(cfg: dict) -> Dialect | None:
    spec = cfg.get("dialect")
    return None if spec is None else Dialect.from_config(spec)


def _c2t_code(prompt: str) -> str:
    """The code of a c2t_prompt()."""
    head, tail = "Code:\n", "\nSummary: "
    if not (prompt.startswith(head) and prompt.endswith(tail)) or len(prompt) < len(head) + len(tail):
        raise PipelineError(f"code world: not a C2T prompt: {prompt[:60]!r}")
    return prompt[len(head):-len(tail)]


def _training_row_in_dialect(row: dict, d: Dialect) -> dict:
    """A code training row with its code in the dialect: plain code rows and the cc, t2c and cc_stdlib task rows
    are code in prompt and target (a t2c prompt is comments, which stay as they are); a c2t row's code is in its
    prompt, and its target, the summary, is English."""
    if row.get("task") == "c2t":
        return {**row, "prompt": c2t_prompt(d.apply(_c2t_code(row["prompt"])))}
    return {**row, "prompt": d.apply(row["prompt"]), "target": d.apply(row["target"])}


def _evaluation_row_in_dialect(row: dict, d: Dialect) -> dict:
    """An evaluation row as a dialect model is asked it: its prompt (and reference) in the dialect. An execution
    row keeps the plain-Python prefix its program starts with (`program_prefix`) and gets `rename_back`, the
    inverse renaming pipeline.scoring.pass_at_k applies to each completion before it runs. CodeXGLUE's Ruby rows
    are not Python: unchanged."""
    if row["id"].startswith("codexglue:"):
        return row
    if row["task"] == "c2t":
        return {**row, "prompt": c2t_prompt(d.apply(_c2t_code(row["prompt"])))}
    prompt = _mbpp_prompt_in_dialect(row["prompt"], d) if row["id"].startswith("mbpp:") else d.apply(row["prompt"])
    return {**row, "prompt": prompt, "target": d.apply(row["target"]),
            "program_prefix": row.get("program_prefix", row["prompt"]), "rename_back": d.inverse}




def _mbpp_prompt_in_dialect(prompt: str, d: Dialect) -> str:
    """MBPP's 3-shot prompt holds prose lines (each task, in English), code lines (its asserts, the exemplars'
    code) and [BEGIN]/[DONE] markers. Only the code goes into the dialect: tokenized as Python, the prose's words
    would be renamed too ("find the ...")."""
    lines = [line + "\n" for line in prompt.split("\n")]
    lines[-1] = lines[-1][:-1]
    if sum(line.startswith(MBPP_TASK_OPENING) for line in lines) != prompt.count("[BEGIN]"):
        raise PipelineError("code world: an MBPP prompt's layout is not one prose line per task; "
                            "_mbpp_prompt_in_dialect needs updating")
    out, code = [], []
    for line in lines:
        if line.startswith(MBPP_TASK_OPENING) or line.strip() in ("[BEGIN]", "[DONE]"):
            out += [d.apply("".join(code)), line]
            code = []
        else:
            code.append(line)
    out.append(d.apply("".join(code)))
    return "".join(out)


def _files_in_dialect(files: dict[str, list[dict]], evaluation: set[str], d: Dialect) -> tuple[dict, dict]:
    """Every split with its Python in the dialect (english_train is prose: as it is), and the summary's record of
    it: the seed, the names, and the share of each split's rows and references the renaming changed (an MBPP
    prompt changes with its exemplars: its reference is the telling figure)."""
    def rename(name, rows):
        if name in evaluation:
            return [_evaluation_row_in_dialect(r, d) for r in rows]
        return rows if name == "english_train" else [_training_row_in_dialect(r, d) for r in rows]

    written = {name: rename(name, rows) for name, rows in files.items()}
    return written, {**d.describe(),
                     "rows_changed": {name: _changed(rows, written[name]) for name, rows in files.items()},
                     "targets_changed": {name: _changed(rows, written[name], ("target",))
                                         for name, rows in files.items()}}


def _changed(before: list[dict], after: list[dict], fields=("prompt", "target")) -> float:
    """The fraction of rows whose text (in any of `fields`) the dialect changed."""
    n = sum(any(a[f] != b[f] for f in fields) for a, b in zip(before, after))
    return round(n / max(len(before), 1), 4)


# ---------------------------------------------------------------- training side


def _synth_training(structures: list[str], n: int, rng: np.random.Generator, bench_code, bench_prose,
                    exclusion: Counter) -> list[tuple[code_synth.Synth, tuple[str, str]]]:
    """n synthesized training functions (structure drawn uniformly, then constants), each with one example."""
    out, seen = [], set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 20 * n + 100:
            raise PipelineError(f"code world: cannot draw {n} distinct synthesized functions")
        st = structures[int(rng.integers(len(structures)))]
        drawn = code_synth.draw(st, rng, 2)
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


def _stats(rows: list[dict]) -> dict:
    lens = [len(r["prompt"]) + len(r["target"]) for r in rows]
    if not lens:
        return {"rows": 0}
    return {"rows": len(rows), "chars": sum(lens), "min": min(lens), "median": float(statistics.median(lens)),
            "mean": round(sum(lens) / len(lens), 1), "p95": float(np.percentile(lens, 95)), "max": max(lens),
            "target_max": max(len(r["target"]) for r in rows)}


def _assert_vocabulary(files: dict[str, list[dict]]) -> None:
    vocab = set(vocabulary())
    for name, rows in files.items():
        for r in rows:
            for k, v in r.items():
                if isinstance(v, str) and (not set(v) <= vocab or not printable(v)):
                    bad = sorted(set(v) - vocab)
                    raise PipelineError(f"code world: {name} row {r.get('id')} field {k} has characters outside the "
                                        f"vocabulary {bad} or a special-token string")


def _in_vocabulary(row: dict) -> bool:
    vocab = set(vocabulary())
    return all(set(v) <= vocab and printable(v) for v in row.values() if isinstance(v, str))


def build(cfg: dict, out_dir: str | Path, seed: int) -> dict:
    """Write the world's splits under out_dir; returns the summary (also written as summary.json)."""
    _check(cfg)
    out = Path(out_dir)
    ev = _evaluation_side(_eval_key(cfg))
    bench_code, bench_prose = ev["bench_index"]
    exclusion = Counter(ev["exclusion"])
    sz = cfg["sizes"]

    # code_train: stdlib functions and synthesized functions, interleaved in a seeded order
    rng = _rng(seed, "code_train")
    funcs = ev["functions"]
    n_std = len(funcs) if sz.get("code_stdlib") is None else min(int(sz["code_stdlib"]), len(funcs))
    std = [funcs[i] for i in sorted(rng.choice(len(funcs), size=n_std, replace=False))]
    syn = _synth_training(ev["structures"], int(sz["code_synthetic"]), _rng(seed, "synthetic"), bench_code,
                          bench_prose, exclusion)
    styles = _rng(seed, "style").random(len(syn)) < float(cfg["synthetic"].get("t2c_style_fraction", 0.0))
    items = [("stdlib", f) for f in std] + [("synthetic", (s, ex, bool(st))) for (s, ex), st in zip(syn, styles)]
    items = [items[i] for i in rng.permutation(len(items))]

    code_train = [_plain_row(it) for it in items]
    code_chars = sum(len(r["target"]) for r in code_train)

    # D_C: task rows over code_train items until composition.fraction of code_train's characters
    comp = cfg["composition"]
    shares = {t: float(v) for t, v in comp["tasks"].items() if float(v) > 0}
    budget = float(comp["fraction"]) * code_chars
    total_share = sum(shares.values())
    order = [items[i] for i in _rng(seed, "composition").permutation(len(items))]
    # the four task formats always (format_train draws from them), plain code only when D_C holds some
    queued = TASKS + tuple(t for t in shares if t not in TASKS)
    queues = {t: [r for r in (_task_row(t, it) for it in order) if r] for t in queued}
    used_ids = set()
    composition, spent = [], {t: 0 for t in shares}
    pos = {t: 0 for t in queued}
    while True:
        # the task furthest below its share of the budget takes the next row
        open_tasks = [t for t in shares if spent[t] < budget * shares[t] / total_share and pos[t] < len(queues[t])]
        if not open_tasks:
            break
        t = min(open_tasks, key=lambda t: (spent[t] / shares[t], t))
        r = queues[t][pos[t]]
        pos[t] += 1
        if r["id"] in used_ids:
            continue
        used_ids.add(r["id"])
        composition.append(r)
        spent[t] += len(r["prompt"]) + len(r["target"])

    # format_train: per task, rows over items not used by D_C
    format_train = []
    for t in TASKS:
        rows = [r for r in queues[t][pos[t]:] if r["id"] not in used_ids][:int(sz["format_per_task"])]
        format_train += rows
    format_train = [format_train[i] for i in _rng(seed, "format").permutation(len(format_train))]

    # mB's little code
    n_mb = round(float(cfg["mb"]["code_fraction"]) * len(code_train))
    mb_idx = sorted(_rng(seed, "mb_code").choice(len(code_train), size=n_mb, replace=False)) if n_mb else []
    mb_code_train = [code_train[i] for i in mb_idx]

    # English
    eng_rng = _rng(seed, "english")
    english_rows, english_info = [], {}
    for source, key in (("gsm8k_train_questions", "english_gsm8k"), ("python_docstrings", "english_docstrings")):
        pool = ev["english"].get(source, [])
        want = len(pool) if sz.get(key) is None else min(int(sz[key]), len(pool))
        picked = [pool[i] for i in sorted(eng_rng.choice(len(pool), size=want, replace=False))] if want else []
        english_rows += [{"prompt": "", "target": u, "source": source} for u in picked]
        english_info[source] = {"pool": len(pool), "rows": want, "chars": sum(map(len, picked))}
    english_rows = [english_rows[i] for i in eng_rng.permutation(len(english_rows))]

    evaluation = dict(ev["evaluation"])
    real = {}
    if cfg.get("eval_sets", "synthetic") == "benchmarks":
        real = benchmark_sets(cfg)
        evaluation.update(real)
    scored_texts = bits_per_byte_sets(cfg, real, ev["english"], english_rows) if cfg.get("bits_per_byte") else {}
    evaluation.update(scored_texts)
    files = {"english_train": english_rows, "code_train": code_train, "mb_code_train": mb_code_train,
             "format_train": format_train, "composition_train": composition, **evaluation}
    dialect = _dialect(cfg)
    if dialect is not None:   # the rows drawn above, their Python renamed (the summary's figures stay the plain ones)
        files, dialect_summary = _files_in_dialect(files, set(evaluation), dialect)
    # the real benchmarks are for a pretrained tokenizer: the summary counts their rows outside the vocabulary
    _assert_vocabulary({k: v for k, v in files.items() if k not in real and k not in scored_texts})
    for name, rows in files.items():
        atomic_write_jsonl(out / f"{name}.jsonl", rows)

    dc_chars = sum(len(r["prompt"]) + len(r["target"]) for r in composition)
    summary = {
        "world": WORLD,
        "seed": seed,
        "eval_seed": cfg["eval_seed"],
        "python": sys.version.split()[0],
        "stdlib": ev["corpus"],
        "vocabulary": "".join(vocabulary(cfg)),
        "max_chars": max(len(r["prompt"]) + len(r["target"]) for rows in files.values() for r in rows),
        "stop_safe": ["\n\n"],
        "files": {name: _stats(rows) for name, rows in files.items()},
        "code_train_sources": dict(sorted(Counter(r["source"] for r in code_train).items())),
        "composition": {"code_train_chars": code_chars, "chars": dc_chars,
                        "fraction_of_code_train": round(dc_chars / max(code_chars, 1), 4),
                        "tasks": dict(sorted(Counter(r["task"] for r in composition).items()))},
        "format_train_tasks": dict(sorted(Counter(r["task"] for r in format_train).items())),
        "english": english_info,
        "held_out": {"cc_stdlib_candidates": ev["cc_stdlib_candidates"], "c2t_pool": ev["c2t_pool"],
                     "synthetic_viable_structures": ev["n_viable_structures"],
                     "synthetic_held_out_structures": ev["held_structures"],
                     "synthetic_training_structures": len(ev["structures"])},
        "benchmarks": {"items": ev["benchmark_counts"], "near_copy": cfg["near_copy"],
                       "hits_by_benchmark": ev["benchmark_hits"]},
        "exclusion": dict(sorted(exclusion.items())),
        "groups": {name: dict(sorted(Counter(r.get("group") for r in rows).items()))
                   for name, rows in evaluation.items()},
        "model_data": MODEL_DATA,
        "evaluation_metrics": EVALUATION_METRICS,
    }
    if real:   # (only then: the synthetic build's summary stays byte-identical to what it was before the option)
        summary["eval_sets"] = "benchmarks"
        offsets = cfg.get("benchmark_offsets") or {}   # recorded only when set: other summaries stay as they were
        dev = cfg.get("benchmark_dev") or {}
        summary["benchmark_sets"] = {split: {"benchmark": BENCHMARK_SETS[BENCHMARK_DEV_SETS.get(split, split)],
                                             "rows": len(rows),
                                             "limit": {**(cfg.get("benchmark_limits") or {}), **dev}.get(split),
                                             "rows_outside_vocabulary": sum(not _in_vocabulary(r) for r in rows)}
                                     | ({"offset": offsets[split]} if offsets.get(split) else {})
                                     | ({"offset": offsets.get(BENCHMARK_DEV_SETS[split], 0)
                                         + cfg["benchmark_limits"][BENCHMARK_DEV_SETS[split]]} if split in dev else {})
                                     for split, rows in real.items()}
    if scored_texts:   # (only then, as above)
        summary["bits_per_byte_sets"] = {name: {"rows": len(rows), "bytes": sum(len(r["target"].encode()) for r in rows),
                                                "groups": dict(sorted(Counter(r["group"] for r in rows).items()))}
                                         for name, rows in scored_texts.items()}
    if dialect is not None:   # (only then: the plain build's summary stays byte-identical)
        summary["dialect"] = dialect_summary
    atomic_write_json(out / "summary.json", summary)
    return summary


def report_lines(cfg: dict, summary: dict) -> list[str]:
    """Lines under the world's report tables: what the CPU tasks are (and the dialect, when the code is in one)."""
    return _task_lines(summary) + _dev_and_bpb_lines(summary) + _dialect_lines(summary)


def _dev_and_bpb_lines(summary: dict) -> list[str]:
    """The benchmark dev slices and the bits-per-byte texts, where the world has them (else nothing: other
    worlds' reports stay as they were)."""
    lines = []
    dev = {s: b for s, b in (summary.get("benchmark_sets") or {}).items() if s in BENCHMARK_DEV_SETS}
    if dev:
        lines.append("Dev slices (for choices; no test item tunes anything): " + "; ".join(
            f"{s} = {BENCHMARK_TITLES[b['benchmark']]} items {b.get('offset', 0) + 1}-{b.get('offset', 0) + b['rows']}"
            for s, b in dev.items()) + ".")
    bpb = summary.get("bits_per_byte_sets") or {}
    if bpb:
        what = {"bpb_code_test": "the test items' reference solutions (HumanEval: prompt + canonical solution; MBPP: "
                                 "its reference code)",
                "bpb_prose_test": "GSM8K train questions held out of every training split (English prose)"}
        lines.append("Bits per byte (lower is better; tokenizer-independent: -log2 p of a text's tokens under the model's "
                     "own tokenizer, each conditioned on the tokens before it and one context token, over the text's "
                     "UTF-8 bytes; a composition in its anchor's tokens): " + "; ".join(
                         f"{s} = {what.get(s, s)}, {b['rows']} texts, {b['bytes']:,} bytes" for s, b in bpb.items()) + ".")
    return lines


def _dialect_lines(summary: dict) -> list[str]:
    if "dialect" not in summary:
        return []
    d = summary["dialect"]
    # the share of each test set's prompts and references the renaming changes (an MBPP prompt changes with its
    # exemplars, so its reference is the telling figure)
    changed = ", ".join(f"{s} {d['rows_changed'][s]:.0%}" + (f" (references {d['targets_changed'][s]:.0%})"
                                                             if d["targets_changed"][s] else "")
                        for s in summary["files"] if s.endswith("_test"))
    return [f"Code in a dialect (seed {d['seed']}): {d['builtins_renamed']} builtins and {d['methods_renamed']} "
            f"method names permuted among themselves (pipeline/worlds/code_dialect.py). The code training splits "
            f"are written in it, the evaluation prompts shown in it (rows it changes: {changed}), and generated "
            f"code is renamed back before it runs."]


def _task_lines(summary: dict) -> list[str]:
    f = summary["files"]
    if summary.get("eval_sets") == "benchmarks":
        b = summary["benchmark_sets"]
        def cut(s):
            off, limit = b[s].get("offset", 0), b[s].get("limit")
            if off:
                return f" (items {off + 1}-{off + b[s]['rows']})"
            return f" (first {limit})" if limit else ""
        return [
            f"Code world, real benchmarks (eval_sets: benchmarks): CC = HumanEval, {b['cc_test']['rows']} problems"
            f"{cut('cc_test')}, 0-shot; T2C = MBPP test, {b['t2c_test']['rows']} tasks{cut('t2c_test')}, 3-shot; "
            f"C2T = CodeXGLUE code-to-text Ruby test, {b['c2t_test']['rows']} functions{cut('c2t_test')}, 3-shot "
            f"(the paper's column is Python; only the Ruby copy is here); pass@1 in the sandbox, chrF1. Rows named "
            f"'ours: synthesized' / 'held-out stdlib' hold these benchmarks under this setting; CC-stdlib stays the "
            f"held-out stdlib diagnostic.",
            _composition_line(summary, "the code data"),
        ]
    return [
        f"Code world (CPU preset): CC = {f['cc_test']['rows']} synthesized functions, HumanEval format, held out by "
        f"structure; CC-stdlib = {f['cc_stdlib_test']['rows']} held-out stdlib functions, last statement, tests "
        f"from captured behaviour; T2C = {f['t2c_test']['rows']} synthesized MBPP-like tasks; C2T = "
        f"{f['c2t_test']['rows']} held-out stdlib functions -> first docstring sentence (chrF1).",
        _composition_line(summary, "mA's code data"),
    ]


def _composition_line(summary: dict, of: str) -> str:
    """What D_C holds: its share of the code data, as task rows (the four formats) and/or plain code."""
    c = summary["composition"]
    tasks = c.get("tasks", {})
    plain = tasks.get("code", 0)
    formats = {t: n for t, n in tasks.items() if t != "code"}
    parts = ([f"task rows ({', '.join(f'{t} {n}' for t, n in formats.items())})"] if formats else []) \
        + ([f"{plain} functions of plain code"] if plain else [])
    return f"D_C = {c['fraction_of_code_train']:.1%} of {of} (characters), as " + " and ".join(parts) + "."

