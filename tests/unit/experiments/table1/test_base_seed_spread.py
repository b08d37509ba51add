"""experiments/table1/base_seed_spread.py: each base seed's row holds its own composition seeds, the pooled row every
run, and the spread line the base seeds' means; a results folder without CALM runs is one line, not a table."""
import json

import pytest

from tests.support.experiment_scripts import load_experiment

spread = load_experiment("table1/base_seed_spread.py")


def metrics(held_out, held_in=100.0, kv_subs=98.0, num=100.0):
    return {"metrics": {"kv_math_test": {"score": held_out}, "kv_math_held_in_test": {"score": held_in},
                        "kv_subs_test": {"score": kv_subs}, "num_math_test": {"score": num}}}


def write_base(folder, held_outs):
    folder.mkdir(parents=True)
    (folder / "mA.json").write_text(json.dumps(metrics(0.0, kv_subs=100.0)))
    (folder / "mB.json").write_text(json.dumps(metrics(0.0, num=99.0)))
    for seed, value in enumerate(held_outs):
        (folder / f"calm-seed{seed}.json").write_text(json.dumps(metrics(value)))


def test_rows_pool_and_spread(tmp_path):
    write_base(tmp_path / "base1" / "results", [90.0, 92.0, 94.0])
    write_base(tmp_path / "base2" / "results", [80.0, 84.0])
    bases = {n: spread.read_base(tmp_path / f"base{n}" / "results") for n in (1, 2)}
    lines = spread.table(bases)
    assert lines[2].startswith("| seed 1 | 100.0 | 99.0 | 90.0 / 92.0 / 94.0 | **92.0 ± 2.0** |")
    assert lines[3].startswith("| seed 2 | 100.0 | 99.0 | 80.0 / 84.0 | **82.0 ± 2.8** |")
    assert lines[4].startswith("| every run (5) | | | | **88.0 ± 5.8** |")   # mean of the 5 runs, not of the 2 means
    assert "means span 82.0-92.0 (std 7.1)" in lines[5] and "on average 2.4" in lines[5]


def test_a_folder_without_calm_runs_is_one_line(tmp_path):
    write_base(tmp_path / "base1" / "results", [])
    with pytest.raises(SystemExit, match="holds no calm-seed"):
        spread.read_base(tmp_path / "base1" / "results")


def test_another_recipe_leaves_out_the_published_row_and_two_recipes_are_refused(tmp_path, capsys):
    write_base(tmp_path / "base1" / "results", [90.0, 92.0])
    (tmp_path / "base1" / "results" / "overrides.txt").write_text("a.dropout=0.4\n")
    spread.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "recipe: a.dropout=0.4" in out and "| seed 1 |" in out and "published" not in out
    write_base(tmp_path / "base2" / "results", [80.0, 84.0])   # the published recipe: no overrides.txt
    with pytest.raises(SystemExit, match="different CALM_OVERRIDES"):
        spread.main([str(tmp_path)])
