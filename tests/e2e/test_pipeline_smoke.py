"""End to end: ONE `dvc repro` of the micro preset over every CPU world, in a fresh git copy of the repository: the
key-value world (Table 1), the language world (Tables 2-3, Figure 2) and the code world (Table 4: its pass@1 sets
scored in the sandbox, its chrF set). Every table has all its cells, a second `dvc repro` runs nothing, and a change
to one model's conf reruns that model's stages and its table only. This is the suite's one proof of the DVC wiring
(dvc.yaml, params.yaml, the lock); every other chain runs the stages in-process (tests/support/stage_chain.py),
among them a world declared by conf alone with every training kind (tests/integration/test_conf_declared_world.py:
dvc.yaml iterates over the same stage maps for it). It reads ../shared/benchmarks (CI has it); without it, it is
skipped.

The targets are the worlds' reports, not Table 5: its models (the same generic stages, and kinds the conf-declared
world covers) would add a dozen stage processes to CI's longest test; tests/integration/test_ablations.py trains and
sweeps them at the micro preset through the stages' own functions."""
import csv
import json
import subprocess

import pytest

from tests.support.fresh_repo import (BENCHMARKS, HAS_BENCHMARKS, assert_nothing_reruns, fresh_repo, repro,
                                      repro_timed, stages_run)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_BENCHMARKS, reason=f"needs the real benchmarks in {BENCHMARKS}")
def test_micro_dvc_repro_of_every_cpu_world(tmp_path):
    worlds = "kv_arithmetic,languages,code"
    targets = ["report@table1", "report@table2", "report@table3", "figure@figure2", "report@table4"]
    # the copy lives outside the checkout, so ../shared is not beside it
    repo, env, params = fresh_repo(tmp_path, worlds, (f"worlds.languages.data.benchmarks_dir={BENCHMARKS}",
                                                      f"worlds.code.data.benchmarks_dir={BENCHMARKS}"))
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

    # one model's change reruns that model's stages and its world's table only: not its bases, not another world
    subprocess.run(params + ["worlds.kv_arithmetic.models.calm.train.steps=3"], cwd=repo, env=env, check=True,
                   capture_output=True)
    r = repro(repo, env, targets)
    assert r.returncode == 0, r.stderr[-2000:]
    ran = stages_run(r.stdout)
    assert ran == {"train@kv_arithmetic/calm", "evaluate@kv_arithmetic/calm", "report@table1"}, ran

    # a report that cannot run (a metrics file it reads is gone) keeps the table it had: DVC deletes a stage's
    # outputs before running it unless they persist
    published = {p: (repo / p).read_bytes() for p in ("reports/table1.md", "reports/table1.csv")}
    (repo / "reports/kv_arithmetic/metrics/mA.json").unlink()
    r = repro(repo, env, ["-s", "report@table1"])
    assert r.returncode != 0
    assert {p: (repo / p).read_bytes() for p in published} == published
