"""Synthesized training sets (pipeline/synthesize.py, stage synthesize@<world>/<set>): how conf declares them and
models name them (the stage maps, the split files), the one-line errors of a bad declaration, and the filters of
back-translation (pipeline/worlds/languages_xtok/back_translation.py) that decide which candidates become rows.
The stage itself runs in the language world's chain (tests/integration/test_languages_xtok_world.py)."""
import pytest

from pipeline.errors import PipelineError
from pipeline.layout import split_file, synthesized_dir
from pipeline.params import compose_params, model_spec, stage_maps
from pipeline.synthesize import synthesized_spec
from pipeline.worlds.languages_xtok.back_translation import as_rows, degenerate, dropped, verdict

W = "worlds.languages_xtok"
BASE = ["world=[languages_xtok]", "preset=micro"]


def _params(*overrides):
    return compose_params([*BASE, *overrides], config_name="real")


def test_a_model_that_names_a_synthesized_set_depends_on_its_folder_and_reads_its_rows():
    stages = stage_maps(_params(f"{W}.models.skyline.data=[composition_train]"))
    made = str(synthesized_dir("languages_xtok", "bt_english"))
    assert stages["synthesize"]["languages_xtok/bt_english"]["model"] == "models/languages_xtok/mA"
    assert made in stages["train"]["languages_xtok/calm"]["upstream"]
    assert made in stages["train"]["languages_xtok/lora"]["upstream"]          # calm's variant: the same D_C
    assert made not in stages["train"]["languages_xtok/skyline"]["upstream"]   # told to train on the UDHR
    assert str(split_file("languages_xtok", "synthesized/bt_english")) == f"{made}/rows.jsonl"
    assert str(split_file("languages_xtok", "composition_train")) == "data/languages_xtok/composition_train.jsonl"


def test_bad_declarations_are_one_line():
    with pytest.raises(PipelineError, match=r"trains on synthesized/nope, which worlds.languages_xtok.synthesized does not declare \(bt_english\)"):
        stage_maps(_params(f"{W}.models.calm.data=[synthesized/nope]"))
    with pytest.raises(PipelineError, match=r"synthesized.bt_english: `by` must name a model of the world, not 'mC'"):
        stage_maps(_params(f"{W}.synthesized.bt_english.by=mC"))
    p = _params()
    with pytest.raises(PipelineError, match=r"unknown worlds.languages_xtok.synthesized entry 'languages_xtok/nope': world languages_xtok declares bt_english"):
        synthesized_spec(p, "languages_xtok/nope")
    with pytest.raises(PipelineError, match=r"unknown world 'nowhere'"):
        synthesized_spec(p, "nowhere/bt_english")
    # the same lookup names a world's models for the train and evaluate stages
    with pytest.raises(PipelineError, match=r"unknown model 'languages_xtok/nope': world languages_xtok declares mA, mB, calm, lora, skyline$"):
        model_spec(p, "languages_xtok/nope")
    assert model_spec(p, "languages_xtok/calm")[2]["anchor"] == "mB"


def test_a_missing_model_is_one_line_before_anything_loads(tmp_path, monkeypatch):
    from pipeline import synthesize

    monkeypatch.chdir(tmp_path)
    with pytest.raises(PipelineError, match=r"its model models/languages_xtok/mA is not built \(dvc repro train@languages_xtok/mA\)"):
        synthesize.synthesize(_params(), "languages_xtok/bt_english")
    assert not (tmp_path / "data").exists()


KEEP = {"max_copy_chrf": 60, "min_roundtrip_chrf": 20, "drop_degenerate": True}


def _candidate(**kw):
    c = {"group": "pol_Latn", "english": "Tom has 3 apples.", "source": "Tomek ma 3 jabłka.", "roundtrip": "Tom has 3 apples.",
         "empty": False, "copy_chrf": 20.0, "degenerate": False, "roundtrip_chrf": 80.0}
    return {**c, **kw}


def test_each_filter_drops_what_it_says_and_only_that():
    assert verdict(_candidate(), KEEP)
    assert not verdict(_candidate(empty=True, source="", copy_chrf=None), KEEP)
    assert not verdict(_candidate(copy_chrf=60.0), KEEP) and verdict(_candidate(copy_chrf=59.9), KEEP)
    assert not verdict(_candidate(roundtrip_chrf=19.9), KEEP) and verdict(_candidate(roundtrip_chrf=20.0), KEEP)
    assert not verdict(_candidate(degenerate=True), KEEP)
    assert verdict(_candidate(degenerate=True), {**KEEP, "drop_degenerate": False})
    batch = [_candidate(), _candidate(empty=True, source="", copy_chrf=None, roundtrip_chrf=0.0), _candidate(copy_chrf=75.0)]
    assert dropped(batch, KEEP) == {"empty": 1, "degenerate": 0, "copy": 1, "roundtrip": 1}


@pytest.mark.parametrize("text,loop", [("ma ma ma ma", True), ("aaaaaaaa", True), ("ma ma ma", False),
                                       ("Tomek ma trzy jabłka i dwie gruszki.", False), ("a a a a a", False)])
def test_a_greedy_loop_is_a_word_four_times_or_a_character_eight_times(text, loop):
    assert degenerate(text) is loop


def test_rows_are_the_kept_candidates_in_a_seeded_order_as_zero_shot_prompts():
    from pipeline.worlds.languages_xtok.splits import translation_prompt

    candidates = [dict(_candidate(english=f"Sentence number {i}.", source=f"Zdanie {i}."), kept=i % 3 != 0) for i in range(12)]
    rows = as_rows(candidates, seed=0, task="bt_english")
    assert sorted(r["target"] for r in rows) == sorted(f" Sentence number {i}.\n" for i in range(12) if i % 3)
    assert rows == as_rows(candidates, seed=0, task="bt_english")
    assert [r["target"] for r in rows] != [r["target"] for r in as_rows(candidates, seed=1, task="bt_english")]
    for r in rows:
        i = int(r["target"].split()[-1].rstrip("."))
        assert r["prompt"] == translation_prompt("pol_Latn", f"Zdanie {i}.", []) and r["group"] == "pol_Latn"
    assert len({r["id"] for r in rows}) == len(rows)
