"""A fresh git copy of the repository with a composed params.yaml, and `dvc repro` in it: what the smoke tests
and the paper-preset stand-in runs share. The copy lives outside the checkout, so ../shared is not beside it:
pass the benchmarks directory as an override."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# the language and code worlds read FLORES-200, GSM8K, MBPP and CodeXGLUE from ../shared/benchmarks (CI has it)
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
HAS_BENCHMARKS = all((BENCHMARKS / d).is_dir() for d in ("flores200", "gsm8k", "mbpp", "codexglue_code_to_text"))


def stages_run(stdout: str) -> set[str]:
    return {line.split("'")[1] for line in stdout.splitlines() if line.startswith("Running stage")}


def fresh_repo(tmp_path: Path, worlds: str, overrides: tuple[str, ...] = (), preset: str = "micro",
               extra_files: dict[str, Path] | None = None, pipeline: str = "main") -> tuple[Path, dict, list[str]]:
    """A fresh git copy of the repository whose params.yaml is `preset` of `worlds` plus `overrides`;
    `extra_files` maps a path in the copy to a file to put there first (e.g. a conf-declared world).
    pipeline="real": the real-model worlds' pipeline is composed instead (real/params.yaml, for targets
    `real/dvc.yaml:<stage>`), and params.yaml stays the committed one, as in a user's checkout."""
    from pipeline.params import PUBLISHED_OUTPUTS, PUBLISHED_PRESET, copy_checkout

    repo = tmp_path / "repo"
    repo.mkdir()
    # another preset's copy leaves out the published preset's outputs and lock entries, as its own workspace does
    # (`make params OVERRIDES=preset=micro`: pipeline.params.preset_workspace); DVC would otherwise reread and rewrite
    # the whole committed dvc.lock (~450 KB) after every stage
    copy_checkout(ROOT, repo, PUBLISHED_OUTPUTS if preset != PUBLISHED_PRESET else ())
    (repo / "reports").mkdir(exist_ok=True)
    for rel, src in (extra_files or {}).items():
        shutil.copy(src, repo / rel)
    env = dict(os.environ, WANDB_MODE="disabled", PATH=f"{BIN}:{os.environ['PATH']}")
    env.pop("CALM_PARAMS", None)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    params = [sys.executable, "-m", "pipeline.params", f"--pipeline={pipeline}", f"preset={preset}", f"world=[{worlds}]",
              *overrides]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    made = subprocess.run(params, cwd=repo, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-2000:]
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "copy"], cwd=repo, check=True)
    return repo, env, params


def repro(repo: Path, env: dict, targets: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dvc"), "repro", *targets], cwd=repo, env=env, capture_output=True, text=True)


def repro_timed(repo: Path, env: dict, targets: list[str], what: str) -> None:
    """`targets` may start with dvc repro's options (e.g. --no-commit: no copy of large models into DVC's cache)."""
    t0 = time.time()
    r = repro(repo, env, targets)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(f"dvc repro, {what}: {time.time() - t0:.0f} s")


def assert_nothing_reruns(repo: Path, env: dict, targets: list[str]) -> None:
    r = repro(repo, env, targets)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not stages_run(r.stdout), r.stdout[-2000:]
