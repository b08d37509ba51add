"""Per-language report rows and the gain figure (paper Tables 2-3, Figure 2) read the right per-group figures:
a language's cell is that language's score, an average row the mean over languages, a #(>mB) row the count of
languages above mB, and the figure's gains are each model's score minus mB's, per language."""
import csv
import io
import json
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.figure import render
from pipeline.params import compose_params
from pipeline.report import build_table
from pipeline.stages import derive, evaluated_models

WORLD = "languages"


@pytest.fixture(scope="module")
def params():
    return compose_params(["world=[languages]"])


def _score(model_index: int, set_index: int, group_index: int) -> float:
    # distinct per model, set and group; model 2 (mB) is not uniformly below or above the others
    return round(((model_index * 13 + set_index * 5 + group_index * 7) % 17) * 3.5 + model_index / 4, 2)


def _fake_outputs(root: Path, params: dict) -> dict:
    w = params["worlds"][WORLD]
    groups = {"flores_lrl_test": [f"syn-{c}" for c in w["data"]["languages"]["lrl"]],
              "math_lrl_test": [f"syn-{c}" for c in w["data"]["languages"]["lrl"]],
              "flores_hrl_test": [f"syn-{c}" for c in w["data"]["languages"]["hrl"]],
              "math_hrl_test": ["en"] + [f"syn-{c}" for c in w["data"]["languages"]["hrl"]]}
    (root / "data" / WORLD).mkdir(parents=True)
    summary = {"languages": {"lrl": groups["flores_lrl_test"], "hrl": groups["flores_hrl_test"], "near": [], "far": []},
               "flores": {"chosen": 40, "max_chars": 100}, "math": {"test_problems_chosen": 40, "ops": ["+"], "max_operand": 100}}
    (root / "data" / WORLD / "summary.json").write_text(json.dumps(summary))
    (root / "reports" / WORLD / "metrics").mkdir(parents=True)
    scores = {}
    for i, model in enumerate(evaluated_models(params, WORLD)):
        metrics = {}
        for j, (s, gs) in enumerate(groups.items()):
            by_group = {g: _score(i, j, k) for k, g in enumerate(gs)}
            metrics[s] = {"metric": "chrf", "score": 99.0, "chrf2": 50.0 + i, "n": 40 * len(gs), "by_group": by_group}
        scores[model] = metrics
        (root / "reports" / WORLD / "metrics" / f"{model}.json").write_text(json.dumps({"model": model, "metrics": metrics}))
        # Table 2 is a table over seeds: a model's default run is its metrics beside its train_info.json
        (root / "models" / WORLD / model).mkdir(parents=True)
        (root / "models" / WORLD / model / "train_info.json").write_text(json.dumps({"seed": 0, "steps": 1, "n_parameters": 1000}))
    return scores


def test_language_tables_read_groups_means_and_counts(tmp_path, monkeypatch, params):
    scores = _fake_outputs(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    md2, _, cells = build_table("table2", params)
    cell = {(c["task"], c["model"]): c["ours"] for c in cells}
    lrl = scores["calm"]["flores_lrl_test"]["by_group"]
    assert cell[("syn-lij (lij)", "CALM")] == lrl["syn-lij"]
    assert cell[("syn-arb (acm)", "mB")] == scores["mB"]["flores_lrl_test"]["by_group"]["syn-arb"]
    assert cell[("LRL average (ours 26; paper 10)", "CALM")] == pytest.approx(sum(lrl.values()) / len(lrl))
    mb = scores["mB"]["flores_lrl_test"]["by_group"]
    above = sum(1 for g in lrl if lrl[g] > mb[g])
    assert 0 < above < len(lrl)  # the fixture makes the count informative
    assert cell[("LRLs above mB (ours of 26; paper: CALM 175 of 192)", "CALM")] == above
    assert cell[("LRLs above mB (ours of 26; paper: CALM 175 of 192)", "mB")] == 0
    assert cell[("LRL pooled chrF2 (sacrebleu's default)", "CALM")] == scores["calm"]["flores_lrl_test"]["chrf2"]
    md3, _, cells3 = build_table("table3", params)
    # the cpu preset grades math with GSM8K's calculator: the table that shows those sets says so, the other not
    assert "- grading: math_lrl_test, math_hrl_test with a calculator" in md3 and "calculator (GSM8K" not in md2
    en = {c["model"]: c["ours"] for c in cells3 if c["task"] == "en"}
    assert en["skyline"] == scores["skyline"]["math_hrl_test"]["by_group"]["en"]
    assert len(cells3) == 10 * 5


def test_a_row_naming_a_missing_language_is_one_clear_error(tmp_path, monkeypatch, params):
    _fake_outputs(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    bad = json.loads(json.dumps(params))
    bad["reports"]["table2"]["blocks"][WORLD]["rows"][0]["group"] = "syn-xyz"
    with pytest.raises(PipelineError, match="no group 'syn-xyz'"):
        build_table("table2", bad)


def test_figure2_plots_each_languages_gain_over_mB(tmp_path, monkeypatch, params):
    scores = _fake_outputs(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    png, table = render("figure2", params)
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    rows = list(csv.DictReader(io.StringIO(table)))
    calm = {r["group"]: float(r["gain_over_mB"]) for r in rows if r["series"] == "CALM"}
    lrl = scores["calm"]["flores_lrl_test"]["by_group"]
    assert calm == {g: pytest.approx(round(lrl[g] - scores["mB"]["flores_lrl_test"]["by_group"][g], 2)) for g in lrl}
    assert png == render("figure2", params)[0]  # same numbers, same bytes (DVC sees no change on a rerun)


def test_a_figure_of_a_model_no_report_evaluates_is_refused(params):
    bad = json.loads(json.dumps(params))
    bad["figures"]["figure2"]["models"]["vanilla"] = "mA_never"
    with pytest.raises(PipelineError, match="mA_never"):
        derive(bad)
