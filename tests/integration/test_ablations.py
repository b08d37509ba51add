"""Table 5 (paper §4.4): the ablations are conf entries (variants of calm), the LoRA baseline matches CALM's added
parameters, random mA is untrained and vanilla mA is mA's starting checkpoint, the sweep command (Hydra multirun)
writes one run per variant and seed and a report over seeds, and bad input is one line and exit 2 with no report
left behind."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.errors import PipelineError
from pipeline.params import compose_params, dump_params

ROOT = Path(__file__).resolve().parents[2]
WORLD = "kv_arithmetic"
VARIANTS = {  # what each variant of calm declares; everything else must be calm's
    "vanilla_mA": {"augmenting"},
    "random_mA": {"augmenting"},
    "encoder": {"composition.mode"},
    "lora": {"kind", "init", "lora.r.match", "lora.dropout"},
}


def _diff_keys(a: dict, b: dict, prefix="") -> set[str]:
    out = set()
    for k in set(a) | set(b):
        if k in ("variant_of", "seed"):
            continue
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, (dict, type(None))):
            out |= _diff_keys(x, y or {}, f"{prefix}{k}.")
        elif x != y:
            out.add(f"{prefix}{k}")
    return out


@pytest.mark.parametrize("preset", ["micro", "cpu", "paper"])
def test_each_variant_is_calm_but_for_what_it_declares(preset):
    models = compose_params([f"preset={preset}"])["worlds"][WORLD]["models"]
    for name, declared in VARIANTS.items():
        assert models[name]["variant_of"] == "calm"
        assert _diff_keys(models[name], models["calm"]) == declared, name
        assert models[name].get("seed") is None  # its own seed, not calm's
    assert models["random_mA"]["augmenting"] == ["mA_random_init"] and models["vanilla_mA"]["augmenting"] == [models["mA"]["init"]]
    assert models["mA_random_init"]["arch"] == models["mA"]["arch"] and models["mA_random_init"]["train"]["steps"] == 0
    assert models["skyline"]["kind"] == "finetune" and models["skyline"]["init"] == "mB"
    # a change to calm reaches every variant (copied once the conf is composed: pipeline.params.inherit_variants)
    changed = compose_params([f"preset={preset}", "worlds.kv_arithmetic.models.calm.composition.attention_dropout=0.3",
                              "worlds.kv_arithmetic.models.calm.train.steps=7"])["worlds"][WORLD]["models"]
    for name in VARIANTS:
        assert changed[name]["composition"]["attention_dropout"] == 0.3 and changed[name]["train"]["steps"] == 7


@pytest.mark.parametrize("preset,rank", [("micro", 14), ("cpu", 51)])
def test_lora_parity_with_calm_counted_from_conf(preset, rank):
    """LoRA's trainable count equals CALM's added count within 2%, counted from conf alone (nothing trained)."""
    from peft import LoraConfig, get_peft_model

    from pipeline.tokenization import world_tokenizer
    from pipeline.training.kinds import _built_architecture, composition_added_parameters, lora_plan

    p = compose_params([f"preset={preset}"])
    tokenizer = world_tokenizer(p, WORLD)
    calm = composition_added_parameters(p, WORLD, "calm", tokenizer)
    plan = lora_plan(_built_architecture(p, WORLD, "mB", tokenizer), calm)
    peft_model = get_peft_model(_built_architecture(p, WORLD, "mB", tokenizer),
                                LoraConfig(r=plan["r"], target_modules=plan["target_modules"], task_type="CAUSAL_LM"))
    lora = sum(x.numel() for x in peft_model.parameters() if x.requires_grad)
    print(f"{preset}: CALM adds {calm:,}, LoRA r={plan['r']} on {plan['target_modules']} trains {lora:,}")
    assert lora == plan["trainable"] and abs(lora - calm) / calm <= 0.02 and plan["r"] == rank
    if preset == "cpu":  # the cpu preset reaches parity on every linear layer of mB
        assert plan["target_modules"] == "all-linear"


def test_a_rank_that_cannot_reach_parity_is_refused_in_one_line():
    from pipeline.tokenization import world_tokenizer
    from pipeline.training.kinds import _built_architecture, composition_added_parameters, lora_plan

    p = compose_params(["preset=micro"])
    tokenizer = world_tokenizer(p, WORLD)
    mB = _built_architecture(p, WORLD, "mB", tokenizer)
    with pytest.raises(PipelineError, match="no LoRA rank reaches parity") as e:  # micro: r=12 -3.6%, r=13 +4.5%
        lora_plan(mB, composition_added_parameters(p, WORLD, "calm", tokenizer), "all-linear")
    assert "\n" not in str(e.value)
    with pytest.raises(PipelineError, match="not a composition"):
        composition_added_parameters(p, WORLD, "mB", tokenizer)


# ---- a micro-preset world, built once, in-process --------------------------------------------------------------
@pytest.fixture(scope="module")
def micro_world(tmp_path_factory):
    from pipeline.build_data import build_world_data
    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import world_tokenizer
    from pipeline.train import train

    work = tmp_path_factory.mktemp("micro_world")
    old = os.getcwd()
    env = {k: os.environ.get(k) for k in ("WANDB_MODE", "CALM_THREADS")}
    os.environ.update(WANDB_MODE="disabled", CALM_THREADS="1")
    os.chdir(work)
    try:
        p = compose_params(["preset=micro", f"world=[{WORLD}]"])
        dump_params(p, work / "params.yaml")
        build_world_data(p, WORLD)
        world_tokenizer(p, WORLD).save_pretrained(str(tokenizer_dir(WORLD)))
        for name in ("vanilla", "mA", "mB", "mA_random_init", "random_mA", "vanilla_mA"):
            train(p, f"{WORLD}/{name}")
    finally:
        os.chdir(old)
        for k, v in env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    return work, p


def _fresh(arch, seed, work, p):
    from transformers import set_seed

    from pipeline.tokenization import load_tokenizer
    from pipeline.training.architectures import build_base_model

    set_seed(seed)
    return build_base_model(arch, load_tokenizer(work / "models" / WORLD / "tokenizer"), p["worlds"][WORLD]["max_positions"])


def test_random_mA_is_untrained_and_vanilla_mA_is_mAs_init(micro_world):
    from pipeline.composition import load_causal_lm
    from pipeline.composition.base_models import fingerprint

    work, p = micro_world
    models = work / "models" / WORLD
    fresh = _fresh(p["worlds"][WORLD]["models"]["mA_random_init"]["arch"], p["seed"], work, p).state_dict()
    saved = load_file(models / "mA_random_init" / "model.safetensors")
    assert saved and all(torch.equal(saved[k], fresh[k]) for k in saved)
    assert json.loads((models / "mA_random_init" / "train_info.json").read_text())["untrained"] is True
    trained_mA = load_file(models / "mA" / "model.safetensors")
    assert {k: v.shape for k, v in saved.items()} == {k: v.shape for k, v in trained_mA.items()}  # mA's shape
    # each composition records the augmenting model it was built on, with a fingerprint of all its weights
    for variant, base in (("vanilla_mA", "vanilla"), ("random_mA", "mA_random_init")):
        record = json.loads((models / variant / "config.json").read_text())["augmenting"][0]
        assert record["name_or_path"] == f"models/{WORLD}/{base}"
        assert record["fingerprint"] == fingerprint(load_causal_lm(str(models / base)))
    assert p["worlds"][WORLD]["models"]["mA"]["init"] == "vanilla"  # vanilla is mA's starting checkpoint


def _run(args, cwd, params=None, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(ROOT), WANDB_MODE="disabled", CALM_THREADS="1")
    env["CALM_PARAMS"] = str(params or Path(cwd) / "params.yaml")
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _one_line_exit_2(r):
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("error: "), r.stderr[-3000:]


@pytest.mark.slow
def test_sweep_two_variants_two_seeds_and_a_report_over_seeds(micro_world):
    work, p = micro_world
    # the micro preset's records go to a sweep of their own (table5-micro), never beside the published preset's,
    # and the table is rewritten only when asked (report=true)
    r = _run(["pipeline.sweep", "-m", "ablation=calm,random_mA", "seed=1,2", "report=true"], work)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not (work / "reports" / WORLD / "sweeps" / "table5").exists()
    runs = {d.name: json.loads((d / "run.json").read_text()) for d in (work / "reports" / WORLD / "sweeps" / "table5-micro").iterdir()
            if (d / "run.json").exists()}
    assert set(runs) == {"calm-seed1", "calm-seed2", "random_mA-seed1", "random_mA-seed2"}
    assert all(run["seed"] == int(name[-1]) and run["conf"]["seed"] == run["seed"] for name, run in runs.items())
    sweep = work / "reports" / WORLD / "sweeps" / "table5-micro"
    # distinct outputs: each job its own weights, trained with its own seed
    w1, w2 = (load_file(sweep / f"calm-seed{k}" / "models" / WORLD / "calm" / "model.safetensors") for k in (1, 2))
    assert w1.keys() == w2.keys() and any(not torch.equal(w1[k], w2[k]) for k in w1)
    # random mA: rebuilt untrained in each job with the job's seed; trained bases linked, never retrained
    arch = p["worlds"][WORLD]["models"]["mA_random_init"]["arch"]
    for k in (1, 2):
        job = sweep / f"random_mA-seed{k}" / "models" / WORLD
        saved, fresh = load_file(job / "mA_random_init" / "model.safetensors"), _fresh(arch, k, work, p).state_dict()
        assert all(torch.equal(saved[n], fresh[n]) for n in saved)
        assert (job / "mB").is_symlink() and not (job / "mA").exists()
        assert (sweep / f"random_mA-seed{k}" / "reports" / WORLD / "metrics" / "random_mA.json").exists()
    assert runs["random_mA-seed1"]["rebuilt_with_seed"] == ["mA_random_init"]

    md = (work / "reports" / "table5.md").read_text()
    lines = {}
    for line in md.splitlines():  # the first table (the second one holds the differences from CALM)
        if line.startswith("| "):
            lines.setdefault(line.split(" | ")[0], line)
    titles = [c.strip() for c in lines["| task"].split("|")[3:-1]]
    seeds = dict(zip(titles, [c.strip() for c in lines["| seeds"].split("|")[3:-1]]))
    assert seeds["random mA"] == "2" and seeds["CALM"] == "2" and seeds["LoRA"] == "0"
    row = [c.strip() for c in lines["| KV-Arithmetic (held-out keys)"].split("|")[3:-1]]
    assert " ± " in row[titles.index("CALM")] and " ± " in row[titles.index("random mA")]
    assert row[titles.index("LoRA")] == "not run" and md.count("INCOMPLETE") == 1
    assert "|Δ mean| > 2 × the larger" in md
    csv_rows = (work / "reports" / "table5.csv").read_text().splitlines()
    assert any(",CALM,calm," in line and ",2,1 2," in line for line in csv_rows)

    # a rerun finishes what is missing only: every job is done already
    r2 = _run(["pipeline.sweep", "-m", "ablation=calm,random_mA", "seed=1,2"], work)
    assert r2.returncode == 0 and r2.stderr.count("done already") == 4, r2.stderr[-2000:]

    # a record made on other bases is kept, and the job says so in one line, unless asked to replace it
    record = sweep / "calm-seed1" / "run.json"
    tampered = dict(runs["calm-seed1"], bases=dict(runs["calm-seed1"]["bases"], **{f"models/{WORLD}/mB": "0" * 16}))
    record.write_text(json.dumps(tampered))
    r3 = _run(["pipeline.sweep", "ablation=calm", "seed=1"], work)
    _one_line_exit_2(r3)
    assert "other data or base models: kept" in r3.stderr and json.loads(record.read_text()) == tampered
    r4 = _run(["pipeline.sweep", "ablation=calm", "seed=1", "overwrite=true"], work)
    assert r4.returncode == 0, r4.stderr[-2000:]
    assert json.loads(record.read_text())["bases"] == runs["calm-seed1"]["bases"]


@pytest.mark.slow
def test_sweep_bad_input_is_one_line_exit_2_and_no_report(micro_world, tmp_path):
    work, p = micro_world
    report = work / "reports" / "table5.md"
    report.unlink(missing_ok=True)
    # an unknown variant: refused before any job runs
    r = _run(["pipeline.sweep", "-m", "ablation=calm,nope", "seed=7"], work)
    _one_line_exit_2(r)
    assert "unknown variant 'nope'" in r.stderr and "encoder" in r.stderr
    assert not (work / "reports" / WORLD / "sweeps" / "table5" / "calm-seed7").exists()
    # a LoRA whose rank cannot reach parity (micro: every linear layer is -3.6% or +4.5%)
    bad = tmp_path / "params.yaml"
    dump_params(compose_params(["preset=micro", f"world=[{WORLD}]", "worlds.kv_arithmetic.models.lora.lora.target_modules=all-linear"]), bad)
    r = _run(["pipeline.sweep", "-m", "ablation=calm,lora", "seed=7"], work, params=bad)
    _one_line_exit_2(r)
    assert "no LoRA rank reaches parity" in r.stderr and not (work / "reports" / WORLD / "sweeps" / "table5" / "calm-seed7").exists()
    from pipeline.params import load_params
    from pipeline.train import train

    old = os.getcwd()
    os.chdir(work)
    try:  # the training stage refuses it too, before loading anything
        with pytest.raises(PipelineError, match="no LoRA rank reaches parity"):
            train(load_params(bad), f"{WORLD}/lora")
    finally:
        os.chdir(old)
    assert not (work / "models" / WORLD / "lora").exists() and not report.exists()
    # a world that is not built
    empty = tmp_path / "empty"
    empty.mkdir()
    dump_params(p, empty / "params.yaml")
    r = _run(["pipeline.sweep", "-m", "ablation=calm", "seed=0,1"], empty)
    _one_line_exit_2(r)
    assert "is not built" in r.stderr and not (empty / "reports").exists()
