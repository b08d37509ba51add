"""The report: every declared cell filled from the metrics, the paper's number beside ours, and the settings a
reader needs to rerun it (a composition's own seed included)."""
import json
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.params import compose_params
from pipeline.report import build_table
from pipeline.stages import evaluated_models


def _fake_outputs(root: Path, params: dict) -> None:
    world = "kv_arithmetic"
    (root / "data" / world).mkdir(parents=True)
    (root / "data" / world / "summary.json").write_text(json.dumps({"held_in_selection": "digit_cover", "n_held_in": 20}))
    (root / "reports" / world / "metrics").mkdir(parents=True)
    sets = params["worlds"][world]["evaluation"]["sets"]
    for i, model in enumerate(evaluated_models(params, world)):
        metrics = {d: {"metric": "exact_match", "score": 10.0 * i + j, "n": 300} for j, d in enumerate(sets)}
        (root / "reports" / world / "metrics" / f"{model}.json").write_text(json.dumps({"model": model, "metrics": metrics}))


@pytest.mark.parametrize("composition_seed", [None, 3])
def test_report_cells_and_settings(tmp_path, monkeypatch, composition_seed):
    overrides = [] if composition_seed is None else [f"worlds.kv_arithmetic.models.calm.seed={composition_seed}"]
    params = compose_params(overrides)
    _fake_outputs(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    md, csv_text, cells = build_table("table1", params)
    assert ("calm's own seed 3" in md) == (composition_seed == 3)
    assert f"seed {params['seed']}" in md
    # mA is the first evaluated model (score 10*0 + j), calm the third (20 + j); KV-MATH held-out is set j=2
    held_out = {c["model"]: c for c in cells if c["set"] == "kv_math_test"}
    assert held_out["CALM"]["ours"] == 22.0 and held_out["CALM"]["paper"] == 84.3
    assert held_out["mA"]["ours"] == 2.0 and "**22.0** / 84.3" in md
    assert len(cells) == 12 and csv_text.count("\n") == 13


def test_report_refuses_a_row_of_a_set_the_world_does_not_evaluate(tmp_path, monkeypatch):
    params = compose_params([])
    params["reports"]["table1"]["blocks"]["kv_arithmetic"]["rows"][0]["set"] = "nope_test"
    _fake_outputs(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PipelineError, match="nope_test"):
        build_table("table1", params)


def test_models_line_names_every_cross_tokenizer_switch_a_composition_sets():
    """A reader reruns what the report names: a switch that changes what CALM computes appears in its line, and
    a composition that leaves them off reads as before (the published same-tokenizer tables stay byte for byte)."""
    from pipeline.report_cells import _model_line
    base = {"kind": "composition", "anchor": "mB", "augmenting": ["mA"], "data": "code_train",
            "composition": {"connections": [[[3, 4]]], "final_norm": True}}
    plain = _model_line("calm", base)
    switched = _model_line("calm", {**base, "composition": {**base["composition"], "read_pending": True,
                                                            "recency_bias": True,
                                                            "lexical_start": {"strength": 0.25, "slope": 4.0}}})
    assert not any(w in plain for w in ("read_pending", "recency", "lexical"))
    assert switched.startswith(plain.split("; D_C")[0])
    for words in ("(read_pending)", "ALiBi recency bias", "lexical start, strength 0.25, slope 4.0"):
        assert words in switched
