"""Table 4 (code world) is a table over seeds, compared with mB (conf/world/code.yaml: `reference: mB`): CALM's
cells are the mean +- std over the DVC default cell and the sweep's seeds (`python -m pipeline.sweep -m world=code
table=table4 ablation=calm seed=1,2`), a sweep run made under another conf is left out, and every other model's
cell is its one run. Built from fake outputs: no training."""
import json
from pathlib import Path

import pytest

from pipeline.params import compose_params
from pipeline.report import build_table

from tests.support.fake_runs import write_fake_run

WORLD = "code"
SETS = ("cc_test", "t2c_test", "c2t_test", "cc_stdlib_test")


@pytest.fixture(scope="module")
def params():
    return compose_params(["world=[code]"])


def _metrics(cc: float, t2c: float, c2t: float) -> dict:
    pass_at_1 = {"metric": "pass_at_k", "n": 100}
    return {"cc_test": {**pass_at_1, "score": cc, "by_group": {"numeric": cc}},
            "t2c_test": {**pass_at_1, "score": t2c, "by_group": {"numeric": t2c}},
            "c2t_test": {"metric": "chrf", "n": 200, "score": c2t, "by_group": {"python": c2t}},
            "cc_stdlib_test": {**pass_at_1, "score": 0.0, "by_group": {"stdlib": 0.0}}}


def _fake(root: Path, p: dict, runs: dict[str, list[tuple[float, float, float]]]) -> None:
    """Each model's seed-0 run as the DVC default cell (metrics beside train_info.json), later seeds as sweep runs."""
    (root / "data" / WORLD).mkdir(parents=True)
    summary = {"files": {s: {"rows": 200 if s == "c2t_test" else 100} for s in SETS},
               "composition": {"fraction_of_code_train": 0.0705}}
    (root / "data" / WORLD / "summary.json").write_text(json.dumps(summary))
    for name, figures in runs.items():
        info = {"seed": 0, "steps": 300, "seconds_this_run": 780.0,
                **({"n_composition_parameters": 516096} if name == "calm" else {"n_parameters": 1000})}
        for seed, (cc, t2c, c2t) in enumerate(figures):
            metrics = _metrics(cc, t2c, c2t)
            write_fake_run(root, p, WORLD, name, seed, metrics, info, sweep="table4")


def test_table4_is_a_table_over_seeds_compared_with_mB(tmp_path, monkeypatch, params):
    tcfg = params["reports"]["table4"]
    assert (tcfg["reference"], tcfg["significance"]) == ("mB", 2.0)
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, params, {"mA": [(49.0, 36.0, 12.7)], "mB": [(0.0, 0.0, 11.8)],
                             "calm": [(26.0, 13.0, 16.7), (5.0, 0.0, 16.1), (5.0, 1.0, 15.8)],
                             "skyline": [(12.0, 4.0, 11.3)]})
    stale = tmp_path / "reports" / WORLD / "sweeps" / "table4" / "calm-seed9"
    stale.mkdir()
    (stale / "run.json").write_text(json.dumps({"model": "calm", "seed": 9, "digest": "old", "metrics": {}, "train_info": {}}))
    md, csv_text, cells = build_table("table4", params)
    cell = {(c["set"], c["model"]): c for c in cells}
    calm_cc = cell[("cc_test", "CALM")]
    assert (calm_cc["ours"], calm_cc["n_seeds"], calm_cc["seeds"]) == (12.0, 3, "0 1 2")
    assert calm_cc["std"] == pytest.approx(12.124, abs=1e-3)
    assert "**12.0** ± 12.1 / 22.5" in md and "| seeds | | 1 | 1 | 3 | 1 |" in md
    assert calm_cc["delta_vs_reference"] == 12.0
    # mB is fixed (one trained model, `reference_fixed`): the spread is CALM's own seeds. CC: +12 within
    # 2 x 12.1, no finding; C2T: +4.4 beyond 2 x 0.46, a finding; mA (one seed): never a finding
    assert tcfg["reference_fixed"] is True
    assert calm_cc["significant"] is False
    calm_c2t = cell[("c2t_test", "CALM")]
    assert calm_c2t["ours"] == pytest.approx(16.2) and calm_c2t["std"] == pytest.approx(0.458, abs=1e-3)
    assert calm_c2t["significant"] is True and cell[("cc_test", "mA")]["significant"] is False
    assert "its standard deviation (mB is one trained model" in md
    assert (cell[("cc_test", "mA")]["ours"], cell[("cc_test", "mA")]["n_seeds"]) == (49.0, 1)
    assert "calm: 1 sweep run(s) made under another conf left out" in md
    assert "Difference from mB" in md and "INCOMPLETE" not in md
    assert len(cells) == 4 * 4 and csv_text.count("\n") == 17


def test_table4_says_which_models_have_not_run(tmp_path, monkeypatch, params):
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, params, {"mA": [(49.0, 36.0, 12.7)], "mB": [(0.0, 0.0, 11.8)], "calm": [(26.0, 13.0, 16.7)]})
    md, _, cells = build_table("table4", params)
    assert "INCOMPLETE: no run yet of code/skyline" in md
    assert cell_of(cells, "cc_test", "mB+Code")["n_seeds"] == 0


def cell_of(cells: list[dict], set_name: str, model: str) -> dict:
    return next(c for c in cells if c["set"] == set_name and c["model"] == model)
