"""Smoke: `dvc repro` of the micro preset in a fresh copy of the repository, with a second world declared by
conf alone (tests/toy_copy_world.yaml as conf/world/copy.yaml, module tests/toy_copy_world.py, every training
kind in it) and the code world (conf/world/code.yaml: Table 4, its pass@1 sets scored in the sandbox and its
chrF set). The worlds build side by side, Tables 1 and 4 have all their cells, a second `dvc repro` runs
nothing, and a change to one world's conf reruns that world's stages only.

The targets are the two worlds' reports, Table 1 and the toy table: Table 5's models (the same generic stages,
and kinds the toy world covers) would add a dozen stage processes to CI's longest test; tests/test_ablations.py
trains and sweeps them at the micro preset through the stages' own functions."""
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _copy_repo(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


TARGETS = ["report@table1", "report@copy_table", "report@table4"]
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"  # the code world reads MBPP, CodeXGLUE and GSM8K train there


def _stages_run(stdout: str) -> set[str]:
    return {line.split("'")[1] for line in stdout.splitlines() if line.startswith("Running stage")}


def test_micro_dvc_repro_two_worlds(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_repo(repo)
    shutil.copy(ROOT / "tests" / "toy_copy_world.yaml", repo / "conf" / "world" / "copy.yaml")
    env = dict(os.environ, WANDB_MODE="disabled", PATH=f"{BIN}:{os.environ['PATH']}")
    env.pop("CALM_PARAMS", None)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    if not (BENCHMARKS / "mbpp" / "mbpp.jsonl").is_file():
        pytest.skip(f"benchmark data not at {BENCHMARKS} (the code world reads it)")
    params = [sys.executable, "-m", "pipeline.params", "preset=micro", "world=[kv_arithmetic,copy,code]",
              f"worlds.code.data.benchmarks_dir={BENCHMARKS}"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(params, cwd=repo, env=env, check=True, capture_output=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "copy"], cwd=repo, check=True)

    t0 = time.time()
    r = subprocess.run([str(BIN / "dvc"), "repro", *TARGETS], cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.time() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(f"micro dvc repro, two worlds: {elapsed:.0f} s")

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

    r2 = subprocess.run([str(BIN / "dvc"), "repro", *TARGETS], cwd=repo, env=env, capture_output=True, text=True)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert not _stages_run(r2.stdout), r2.stdout[-2000:]

    # one world's change reruns that world only
    subprocess.run(params + ["worlds.copy.models.mB.train.steps=4"], cwd=repo, env=env, check=True, capture_output=True)
    r3 = subprocess.run([str(BIN / "dvc"), "repro", *TARGETS], cwd=repo, env=env, capture_output=True, text=True)
    assert r3.returncode == 0, r3.stderr[-2000:]
    ran = _stages_run(r3.stdout)
    assert "train@copy/mB" in ran and not any("kv_arithmetic" in s or "code" in s or s in ("report@table1", "report@table4")
                                              for s in ran), ran
