"""A world declared by conf alone (tests/support/toy_copy_world.yaml as conf/world/copy.yaml, its module
tests/support/toy_copy_world.py): it composes into the stage maps that dvc.yaml iterates over, and its whole chain,
every training kind in it, runs through the stages' own entry points (in-process: tests/support/stage_chain.py),
chrF and exact match scored by the generic evaluate stage. The DVC wiring of those stage maps is proven once, on the
paper's worlds, by tests/e2e/test_pipeline_smoke.py."""
import csv
import json

from pipeline.params import compose_params, stage_maps
from tests.support.stage_chain import run_stages
from tests.support.toy_worlds import conf_with_world

MODELS = {"mA", "mA_random", "mB", "mB_lora", "mB_ft", "calm"}


def test_a_world_declared_by_conf_alone_gets_its_stages_and_its_chain_runs(tmp_path_factory, tmp_path, monkeypatch):
    conf_dir = conf_with_world(tmp_path_factory, "toy_copy_world.yaml", "copy")
    p = compose_params(["preset=micro", "world=[copy]"], conf_dir=conf_dir)

    stages = stage_maps(p)
    assert {k for k in stages["train"] if k.startswith("copy/")} == {f"copy/{m}" for m in MODELS}
    # evaluated: what a report reads (mA only feeds calm)
    assert {k for k in stages["evaluate"] if k.startswith("copy/")} == {f"copy/{m}" for m in MODELS - {"mA"}}
    assert "copy_table" in stages["report"]

    trained = run_stages(p, tmp_path, monkeypatch, reports=["copy_table"])
    assert set(trained) == {f"copy/{m}" for m in MODELS}   # the table's five, and mA, which calm reads

    rows = list(csv.DictReader(open(tmp_path / "reports/copy_table.csv")))
    assert {r["model"] for r in rows} == {"mB", "LoRA", "FT", "CALM", "random"}
    assert {r["metric"] for r in rows} == {"exact_match", "chrf"} and all(r["ours"] for r in rows)
    kinds = {m: (tmp_path / "models/copy" / m / "pipeline_kind").read_text().strip()
             for m in ("mB", "mB_lora", "mB_ft", "calm", "mA_random")}
    assert kinds == {"mB": "base", "mB_lora": "lora", "mB_ft": "finetune", "calm": "composition", "mA_random": "base"}
    assert json.loads((tmp_path / "models/copy/mA_random/train_info.json").read_text())["steps"] == 0
    assert "copy 4-letter strings" in (tmp_path / "reports/copy_table.md").read_text()
