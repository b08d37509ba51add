"""Smoke: `dvc repro` of the micro preset in a fresh copy of the repo writes Table 1 with all
nine cells (target <= 2 minutes on an idle 2-core CPU), and a second `dvc repro` runs nothing."""
import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _copy_repo(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def test_micro_dvc_repro(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_repo(repo)
    env = dict(os.environ, WANDB_MODE="disabled", PATH=f"{BIN}:{os.environ['PATH']}")
    env.pop("CALM_PARAMS", None)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([sys.executable, "-m", "pipeline.params", "preset=micro"], cwd=repo, env=env, check=True, capture_output=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "copy"], cwd=repo, check=True)

    t0 = time.time()
    r = subprocess.run([str(BIN / "dvc"), "repro"], cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.time() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # target <= 120 s on an idle 2-core machine; the default bound leaves room for a shared CPU
    # (measured 261-264 s with three other training jobs on the same 2 cores)
    limit = float(os.environ.get("CALM_SMOKE_MAX_SECONDS", 180))
    print(f"micro dvc repro: {elapsed:.0f} s")
    assert elapsed <= limit, f"micro dvc repro took {elapsed:.0f} s (limit {limit:.0f} s)"

    md = (repo / "reports/table1.md").read_text()
    rows = list(csv.DictReader(open(repo / "reports/table1.csv")))
    main = [r for r in rows if "held-in" not in r["task"]]
    assert len(main) == 9
    assert all(r["ours"] not in ("", None) for r in main)
    assert {r["model"] for r in main} == {"mA", "mB", "CALM"}
    assert "preset `micro`" in md and "KV-Arithmetic (held-out keys)" in md
    for m in ("mA", "mB", "calm"):
        assert (repo / "reports/metrics" / f"{m}.json").exists()
        assert (repo / "reports/predictions" / f"{m}.jsonl").exists()

    r2 = subprocess.run([str(BIN / "dvc"), "repro"], cwd=repo, env=env, capture_output=True, text=True)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert "Running stage" not in r2.stdout, r2.stdout[-2000:]
