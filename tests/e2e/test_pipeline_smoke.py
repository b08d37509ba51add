"""End to end: ONE `dvc repro` of the micro preset over every CPU world, in a fresh git copy of the repository: the
key-value world (Table 1), a world declared by conf alone (tests/support/toy_copy_world.yaml as conf/world/copy.yaml,
module tests/support/toy_copy_world.py, every training kind in it), the language world (Tables 2-3, Figure 2) and the
code world (Table 4: its pass@1 sets scored in the sandbox, its chrF set). Every table has all its cells, a second
`dvc repro` runs nothing, and a change to one world's conf reruns that world's stages only. This is the suite's one
proof of the DVC wiring (dvc.yaml, params.yaml, the lock); every other chain runs the stages in-process
(tests/support/stage_chain.py). It reads ../shared/benchmarks (CI has it); without it, it is skipped.

The targets are the worlds' reports, not Table 5: its models (the same generic stages, and kinds the toy world
covers) would add a dozen stage processes to CI's longest test; tests/integration/test_ablations.py trains and sweeps
them at the micro preset through the stages' own functions."""
import csv
import json
import subprocess

import pytest

from tests.support.fresh_repo import (BENCHMARKS, HAS_BENCHMARKS, ROOT, assert_nothing_reruns, fresh_repo, repro,
                                      repro_timed, stages_run)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_BENCHMARKS, reason=f"needs the real benchmarks in {BENCHMARKS}")
def test_micro_dvc_repro_of_every_cpu_world(tmp_path):
    worlds = "kv_arithmetic,copy,languages,code"
    targets = ["report@table1", "report@copy_table", "report@table2", "report@table3", "figure@figure2",
               "report@table4"]
    # the copy lives outside the checkout, so ../shared is not beside it
    repo, env, params = fresh_repo(tmp_path, worlds, (f"worlds.languages.data.benchmarks_dir={BENCHMARKS}",
                                                      f"worlds.code.data.benchmarks_dir={BENCHMARKS}"),
                                   extra_files={"conf/world/copy.yaml": ROOT / "tests/support/toy_copy_world.yaml"})
    repro_timed(repo, env, targets, f"micro, worlds {worlds}")

    md = (repo / "reports/table1.md").read_text()
    rows = list(csv.DictReader(open(repo / "reports/table1.csv")))
    main = [r for r in rows if "held-in" not in r["task"]]
    assert len(main) == 9 and all(r["ours"] not in ("", None) for r in main)
    assert {r["model"] for r in main} == {"mA", "mB", "CALM"}
    assert "preset `micro`" in md and "KV-Arithmetic (held-out keys)" in md
    for m in ("mA", "mB", "calm"):
        assert (repo / "reports/kv_arithmetic/metrics" / f"{m}.json").exists()
        assert (repo / "reports/kv_arithmetic/predictions" / f"{m}.jsonl").exists()

    # the toy world: every kind trained and evaluated, chrF and exact match through the generic stages
    toy = list(csv.DictReader(open(repo / "reports/copy_table.csv")))
    assert {r["model"] for r in toy} == {"mB", "LoRA", "FT", "CALM", "random"}
    assert {r["metric"] for r in toy} == {"exact_match", "chrf"} and all(r["ours"] for r in toy)
    kinds = {m: (repo / "models/copy" / m / "pipeline_kind").read_text().strip() for m in ("mB", "mB_lora", "mB_ft", "calm", "mA_random")}
    assert kinds == {"mB": "base", "mB_lora": "lora", "mB_ft": "finetune", "calm": "composition", "mA_random": "base"}
    assert json.loads((repo / "models/copy/mA_random/train_info.json").read_text())["steps"] == 0
    assert "copy 4-letter strings" in (repo / "reports/copy_table.md").read_text()

    # the language world (Tables 2-3, Figure 2): every cell, per-language chrF and GSM accuracy, the figure
    for table in ("table2", "table3"):
        cells = list(csv.DictReader(open(repo / f"reports/{table}.csv")))
        assert len(cells) >= 50 and all(c["ours"] not in ("", None) for c in cells), table
        assert {c["model"] for c in cells} == {"vanilla", "mA", "mB", "CALM", "skyline"}
    lang = json.loads((repo / "reports/languages/metrics/calm.json").read_text())["metrics"]
    assert lang["flores_lrl_test"]["metric"] == "chrf" and len(lang["flores_lrl_test"]["by_group"]) == 26
    assert lang["math_hrl_test"]["metric"] == "gsm_accuracy" and "en" in lang["math_hrl_test"]["by_group"]
    assert (repo / "reports/figure2.png").read_bytes().startswith(b"\x89PNG")
    assert "SYNTHETIC" in (repo / "reports/table2.md").read_text()
    # the code world: Table 4's four rows x four models, pass@1 from the sandbox and chrF, every row scored
    t4 = list(csv.DictReader(open(repo / "reports/table4.csv")))
    assert len(t4) == 16 and {r["model"] for r in t4} == {"mA", "mB", "CALM", "mB+Code"}
    assert all(r["ours"] not in ("", None) and r["paper"] for r in t4 if not r["task"].startswith("CC-stdlib"))
    assert {r["set"]: r["metric"] for r in t4} == {"cc_test": "pass_at_k", "t2c_test": "pass_at_k",
                                                   "c2t_test": "chrf", "cc_stdlib_test": "pass_at_k"}
    code_metrics = json.loads((repo / "reports/code/metrics/calm.json").read_text())["metrics"]
    assert code_metrics["cc_test"]["n"] == 6 and "pass@1" in code_metrics["cc_test"]
    predictions = [json.loads(line) for line in open(repo / "reports/code/predictions/calm.jsonl")]
    assert {p["set"] for p in predictions} == {"cc_test", "t2c_test", "c2t_test", "cc_stdlib_test"}
    assert all(len(p["passed"]) == 1 for p in predictions if p["set"] != "c2t_test")

    assert_nothing_reruns(repo, env, targets)

    # one world's change reruns that model's stages in that world only
    subprocess.run(params + ["worlds.copy.models.mB_ft.train.steps=4"], cwd=repo, env=env, check=True, capture_output=True)
    r = repro(repo, env, targets)
    assert r.returncode == 0, r.stderr[-2000:]
    ran = stages_run(r.stdout)
    assert "train@copy/mB_ft" in ran and "report@copy_table" in ran, ran
    other_worlds = {s for s in ran if s.split("@")[1].split("/")[0] in ("kv_arithmetic", "languages", "code")}
    assert not other_worlds and not ran & {"train@copy/mB", "train@copy/calm"}, ran
    assert not ran & {"report@table1", "report@table2", "report@table3", "figure@figure2", "report@table4"}, ran


