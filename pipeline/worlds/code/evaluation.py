"""The code world's evaluation side, the same for every training seed (cached per cfg): the held-out stdlib
functions (CC-stdlib, with tests captured from their behaviour; C2T), the held-out synthesized structures and their
CC and T2C rows, and what training may then use (stdlib functions, structures, English units) after the benchmark
and held-out near-copy exclusions."""
from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pipeline.worlds.code.capture as capture
import pipeline.worlds.code.synthesis as synthesis
from pipeline.errors import PipelineError
from pipeline.worlds.code.corpus import doc_paragraphs, first_sentence, printable, stdlib_corpus
from pipeline.worlds.code.near_copies import NearCopyIndex, benchmark_indexes, code_tokens, words
from pipeline.worlds.code.tasks import WRONG_BODY, _entry, _rng, c2t_prompt, cc_prompt, t2c_prompt


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
    from pipeline.sandbox.harness import run_programs

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
    tests are this world's own (synthesis.py), with a few builtins; tests check a sample in the sandbox."""
    out = []
    for r in rows:
        results = []
        for completion in (r["target"], _wrong(r)):
            try:
                exec(r["prompt"] + completion + "\n" + r["test"], {"__builtins__": dict(synthesis._SAFE)})
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
    observed = capture.capture(candidates, cap, int(cfg["eval_seed"]))
    cc_rows = []
    for f in candidates:
        tests = capture.select_tests(f.id, observed.get(f.id, []), cap, int(cfg["eval_seed"]))
        if tests is None:
            continue
        cc_rows.append({"prompt": f.prefix, "target": f.last, "test": capture.assert_lines(_entry(f), tests),
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
    viable = synthesis.viable_structures(fams)
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
                drawn = synthesis.draw(st, item_rng, n_tests, max_tests, discriminate=True, families=fams)
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
                                          "test": synthesis.test_source(s.name, tests), "entry_point": s.name,
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
