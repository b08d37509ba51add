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

ROOT = Path(__file__).resolve().parent.parent
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


# ---- the report over seeds, from fake runs ---------------------------------------------------------------------
def _fake(root: Path, p: dict, scores: dict[str, list[float]]) -> None:
    """Default cells (seed 0) and sweep runs (seeds 1, 2, ...) with KV-MATH held-out scores; 5.0 elsewhere."""
    from fake_runs import write_fake_run

    (root / "data" / WORLD).mkdir(parents=True)
    (root / "data" / WORLD / "summary.json").write_text(json.dumps({"held_in_selection": "digit_cover", "n_held_in": 20}))
    for base in ("tokenizer", "mA", "mB", "vanilla"):  # what the sweep runs were trained on (their bases' digests)
        (root / "models" / WORLD / base).mkdir(parents=True)
        (root / "models" / WORLD / base / "model.safetensors").write_text(f"weights of {base}")
    cols = p["reports"]["table5"]["blocks"][WORLD]["columns"]
    for name, values in scores.items():
        info = {"seed": 0, "steps": 1500, "seconds_this_run": 300.0,
                **({"n_trainable_parameters": 235008, "lora_r": 51, "lora_target_modules": "all-linear", "lora_match": "calm",
                    "lora_match_parameters": 233472} if name == "lora" else {"n_composition_parameters": 233472})}
        for seed, score in enumerate(values):
            metrics = {s: {"metric": "exact_match", "score": score if s == "kv_math_test" else 5.0, "n": 300}
                       for s in p["worlds"][WORLD]["evaluation"]["sets"]}
            write_fake_run(root, p, WORLD, name, seed, metrics, info, sweep="s")
    assert set(scores) <= set(cols.values())


def test_report_mean_std_and_the_significance_rule(tmp_path, monkeypatch):
    from pipeline.report import build_table

    p = compose_params([f"world=[{WORLD}]"])
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, p, {"calm": [60.0, 62.0, 64.0], "vanilla_mA": [1.0, 2.0, 3.0], "encoder": [58.0, 60.0, 62.0],
                        "lora": [3.0], "random_mA": [0.0, 0.0], "skyline": [0.0, 0.0, 0.0]})
    # a run made under another conf is left out, and said so
    stale = tmp_path / "reports" / WORLD / "sweeps" / "s" / "calm-seed9"
    stale.mkdir()
    (stale / "run.json").write_text(json.dumps({"model": "calm", "seed": 9, "digest": "old", "metrics": {}, "train_info": {}}))
    # so is a run of the current conf trained on other bases (another build, float path or machine: issue 29)
    elsewhere = json.loads((tmp_path / "reports" / WORLD / "sweeps" / "s" / "calm-seed1" / "run.json").read_text())
    assert elsewhere["bases"] and set(elsewhere["bases"]) == {f"data/{WORLD}", f"models/{WORLD}/tokenizer",
                                                              *(f"models/{WORLD}/{m}" for m in ("mA", "mB", "vanilla"))}
    other = tmp_path / "reports" / WORLD / "sweeps" / "s" / "calm-seed7"
    other.mkdir()
    (other / "run.json").write_text(json.dumps(dict(elsewhere, seed=7, metrics={
        s: {"metric": "exact_match", "score": 99.0, "n": 300} for s in p["worlds"][WORLD]["evaluation"]["sets"]},
        bases=dict(elsewhere["bases"], **{f"models/{WORLD}/mB": "0" * 16}))))
    md, csv_text, cells = build_table("table5", p)
    held = {c["model"]: c for c in cells if c["set"] == "kv_math_test"}
    assert (held["CALM"]["ours"], held["CALM"]["std"], held["CALM"]["n_seeds"]) == (62.0, 2.0, 3)
    assert "**62.0** ± 2.0" in md and "INCOMPLETE" not in md
    assert held["vanilla mA"]["significant"] is True and held["vanilla mA"]["delta_vs_reference"] == -60.0
    assert held["mA as encoder"]["significant"] is False  # |Δ| 2 <= 2 x 2
    assert held["LoRA"]["significant"] is False  # one seed: never a finding
    assert "| KV-Arithmetic (held-out keys) | -62.0 † | -60.0 † | -62.0 † | -2.0 | -59.0 |" in md
    assert "calm: 1 sweep run(s) made under another conf left out" in md
    assert "calm: 1 sweep run(s) trained on other data or base models than this build's" in md
    assert "CALM adds 233,472 parameters; LoRA trains 235,008 (+0.66%" in md
    assert "no Table 5 cells for the key-value world" in md
    assert len(cells) == 4 * 6 and csv_text.count("\n") == 25


def test_report_refuses_a_lora_matched_to_another_count(tmp_path, monkeypatch):
    from pipeline.report import build_table

    p = compose_params([f"world=[{WORLD}]"])
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, p, {m: [1.0] for m in ("calm", "vanilla_mA", "encoder", "lora", "random_mA", "skyline")})
    info = tmp_path / "models" / WORLD / "calm" / "train_info.json"
    info.write_text(json.dumps(dict(json.loads(info.read_text()), n_composition_parameters=100000)))
    with pytest.raises(PipelineError, match="retrain it"):
        build_table("table5", p)


def test_report_counts_groups_above_a_model(tmp_path, monkeypatch):
    """A row with `groups_above: mB` counts the groups (e.g. languages) a model scores above mB on (paper: #(>mB))."""
    from pipeline.report import build_table

    p = compose_params([f"world=[{WORLD}]"])
    p["reports"]["table5"]["blocks"][WORLD]["rows"] = [{"name": "#(>mB)", "set": "kv_math_test", "groups_above": "mB"}]
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, p, {m: [1.0, 1.0] for m in ("calm", "vanilla_mA", "encoder", "lora", "random_mA", "skyline")})
    by_group = {"a": 10.0, "b": 20.0, "c": 30.0}
    (tmp_path / "reports" / WORLD / "metrics" / "mB.json").write_text(json.dumps({"metrics": {"kv_math_test": {"by_group": by_group}}}))
    for path in (tmp_path / "reports" / WORLD).rglob("*.json"):
        data = json.loads(path.read_text())
        if "metrics" in data and path.stem != "mB":
            data["metrics"]["kv_math_test"]["by_group"] = {"a": 11.0, "b": 19.0, "c": 31.0 if "calm" in str(path) else 0.0}
            path.write_text(json.dumps(data))
    _, _, cells = build_table("table5", p)
    counts = {c["model"]: (c["ours"], c["n_seeds"], c["metric"]) for c in cells}
    assert counts["CALM"] == (2.0, 2, "#(>mB)") and counts["LoRA"] == (1.0, 2, "#(>mB)")


def test_micro_batching_enters_a_run_digest_only_when_set():
    """A table never mixes runs trained with and without micro-batches, and a world that does not set them keeps
    the digests of the runs published before the setting existed."""
    import copy

    from pipeline.report import run_digest

    p = compose_params([])
    before = run_digest(p, WORLD, "calm")
    for k, same in ((1, True), (4, False)):
        q = copy.deepcopy(p)
        q["worlds"][WORLD]["micro_batches"] = k
        assert (run_digest(q, WORLD, "calm") == before) is same


def test_legacy_records_are_adopted_only_when_a_rerun_on_this_build_reproduces_one(tmp_path, monkeypatch):
    """Records written before they named their bases count again only once a rerun of one of them on the current
    build gives the same scores and loss log (pipeline/records.py); a rerun that differs leaves them all out."""
    from pipeline.records import adopt
    from pipeline.report import build_table, build_digests

    p = compose_params([f"world=[{WORLD}]"])
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, p, {"calm": [60.0, 62.0, 64.0], "skyline": [1.0, 2.0]})  # the skyline builds on mB only
    sweep = tmp_path / "reports" / WORLD / "sweeps" / "s"
    for run in sweep.glob("*/run.json"):  # as written before issue 29: no bases
        record = json.loads(run.read_text())
        record.pop("bases")
        run.write_text(json.dumps(dict(record, train_info=dict(record["train_info"], loss_history=[[10, 1.5]]))))
    assert "calm: 2 sweep run(s) trained on other data or base models" in build_table("table5", p)[0]
    legacy = json.loads((sweep / "calm-seed1" / "run.json").read_text())
    verify = tmp_path / "reports" / WORLD / "sweeps" / "verify" / "calm-seed1"
    verify.mkdir(parents=True)
    for loss, ok in ((1.4, False), (1.5, True)):
        (verify / "run.json").write_text(json.dumps(dict(legacy, train_info=dict(legacy["train_info"], loss_history=[[10, loss]]))))
        if not ok:
            with pytest.raises(PipelineError, match="does not reproduce"):
                adopt(p, WORLD, verify)
            assert all("bases" not in json.loads(r.read_text()) for r in sweep.glob("*/run.json"))
            continue
        assert len(adopt(p, WORLD, verify)) == 3
    for run in sweep.glob("*/run.json"):  # each record gets the digests of its own model's bases
        record = json.loads(run.read_text())
        assert record["bases"] == build_digests(p, WORLD, record["model"]) and "calm seed 1" in record["bases_adopted"]["verified_by"]
    assert set(json.loads((sweep / "skyline-seed1" / "run.json").read_text())["bases"]) == {
        f"data/{WORLD}", f"models/{WORLD}/tokenizer", f"models/{WORLD}/mB"}
    (verify / "run.json").unlink()
    held = {c["model"]: c for c in build_table("table5", p)[2] if c["set"] == "kv_math_test"}
    assert held["CALM"]["n_seeds"] == 3 and held["skyline"]["n_seeds"] == 2


def test_report_leaves_out_a_default_cell_dvc_built_under_other_params(tmp_path, monkeypatch):
    """A default cell whose model (or a base under it) dvc.lock records as trained under other params than
    params.yaml's is not this conf's: left out, and said so, never averaged with this conf's runs (issue 29: after
    a recipe change, a sweep's report met the variants of the earlier recipe still on disk)."""
    import yaml

    from pipeline.report import build_table

    p = compose_params([f"world=[{WORLD}]"])
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, p, {"calm": [60.0, 62.0, 64.0], "vanilla_mA": [1.0, 2.0, 3.0], "encoder": [58.0, 60.0, 62.0],
                        "lora": [3.0], "random_mA": [0.0, 0.0], "skyline": [0.0, 0.0, 0.0]})
    models = p["worlds"][WORLD]["models"]
    locked = {f"train@{WORLD}/{n}": {"params": {"params.yaml": {f"worlds.{WORLD}.models.{n}": models[n]}}}
              for n in ("calm", "vanilla_mA", "encoder", "mB")}
    older = dict(models["encoder"], train=dict(models["encoder"]["train"], steps=models["encoder"]["train"]["steps"] // 2))
    locked[f"train@{WORLD}/encoder"]["params"]["params.yaml"][f"worlds.{WORLD}.models.encoder"] = older
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": locked}))
    md, _, cells = build_table("table5", p)
    held = {c["model"]: c for c in cells if c["set"] == "kv_math_test"}
    assert (held["CALM"]["ours"], held["CALM"]["n_seeds"]) == (62.0, 3)  # a current default cell still counts
    assert (held["mA as encoder"]["ours"], held["mA as encoder"]["n_seeds"]) == (61.0, 2)  # seeds 1-2 only
    assert (f"encoder: the DVC default cell is left out: models/{WORLD}/encoder was trained under other params "
            "than params.yaml's") in md

    # an anchor retrained under other params makes every composition on it stale
    locked[f"train@{WORLD}/mB"]["params"]["params.yaml"][f"worlds.{WORLD}.models.mB"] = dict(models["mB"], prefix_pool=7)
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": locked}))
    md, _, cells = build_table("table5", p)
    held = {c["model"]: c for c in cells if c["set"] == "kv_math_test"}
    assert (held["CALM"]["ours"], held["CALM"]["n_seeds"]) == (63.0, 2)
    assert f"calm: the DVC default cell is left out: models/{WORLD}/mB was trained under other params" in md


def test_the_lock_is_read_as_dvc_writes_it(tmp_path):
    """DVC writes `lr: 5e-05` (YAML 1.2: a float); PyYAML's 1.1 resolver would read a string and call a current
    default cell stale (the paper preset's chains left mB, CALM and the skyline out of their tables)."""
    from pipeline.seed_tables import dvc_locked_params

    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  train@w/m:\n    params:\n      params.yaml:\n"
                                       "        worlds.w.models.m:\n          train: {lr: 5e-05, steps: 2}\n")
    assert dvc_locked_params(tmp_path)["train@w/m"]["worlds.w.models.m"]["train"] == {"lr": 5e-05, "steps": 2}
