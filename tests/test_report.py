"""The Table 1 report names the settings a reader needs to rerun it, including a composition's own seed."""
import json
from pathlib import Path

import pytest

from pipeline.config import compose_params
from pipeline.report import build_table


def _fake_outputs(root: Path, params: dict) -> None:
    world = params["evaluation"]["world"]
    (root / "data" / world).mkdir(parents=True)
    (root / "data" / world / "summary.json").write_text(json.dumps({"held_in_selection": "digit_cover", "n_held_in": 20}))
    (root / "reports" / "metrics").mkdir(parents=True)
    for i, model in enumerate(params["evaluation"]["models"]):
        metrics = {d: {"accuracy": 10.0 * i + j, "n": 300} for j, d in enumerate(params["evaluation"]["datasets"])}
        (root / "reports" / "metrics" / f"{model}.json").write_text(json.dumps({"model": model, "metrics": metrics}))


@pytest.mark.parametrize("composition_seed", [None, 3])
def test_report_names_the_composition_seed(tmp_path, monkeypatch, composition_seed):
    overrides = [] if composition_seed is None else [f"compositions.calm.seed={composition_seed}"]
    params = compose_params(overrides)
    _fake_outputs(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    md = build_table("table1", params)[0]
    assert ("composition seed 3" in md) == (composition_seed == 3)
    assert f"seed {params['seed']}" in md
