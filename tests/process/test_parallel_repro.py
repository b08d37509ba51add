"""`python -m pipeline.parallel_repro`: the stages `dvc repro` would run, several at a time, recorded as `dvc repro`
records them. On a toy DVC project of shell stages: two independent stages run at the same time (each waits for the
other to start), a `dvc repro` afterwards runs nothing, a failing stage stops the run in one `error:` line while the
stage beside it is still recorded, a `dvc add`ed file upstream is recorded anew and never run. On the micro
key-value world: the lock it writes is the lock a sequential `dvc repro -f` writes."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.fresh_repo import BIN, assert_nothing_reruns, fresh_repo, stages_run

ROOT = Path(__file__).resolve().parents[2]


def _waits_for(other: str, me: str) -> str:
    """A stage that says it started, then waits (up to 60 s) for `other` to say so: it ends well only if the two
    run at the same time."""
    return (f"touch {me}.started; i=0; while [ ! -e {other}.started ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); "
            f"done; test -e {other}.started && echo {me} > {me}.txt")


TOY_STAGES = {
    "a": {"cmd": _waits_for("b", "a"), "outs": ["a.txt"]},
    "b": {"cmd": _waits_for("a", "b"), "outs": ["b.txt"]},
    "c": {"cmd": "cat a.txt b.txt > c.txt", "deps": ["a.txt", "b.txt"], "outs": ["c.txt"]},
}


def _toy_project(tmp_path: Path, stages: dict) -> tuple[Path, dict]:
    repo = tmp_path / "toy"
    repo.mkdir()
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([str(BIN / "dvc"), "init", "-q"], cwd=repo, env=env, check=True)
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    return repo, env


def _parallel(repo: Path, env: dict, *targets: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.parallel_repro", "-j", "2", *targets], cwd=repo, env=env,
                          capture_output=True, text=True)


def _locked(repo: Path) -> dict:
    return yaml.safe_load((repo / "dvc.lock").read_text())["stages"]


@pytest.mark.slow
def test_independent_stages_run_together_and_dvc_then_runs_nothing(tmp_path):
    repo, env = _toy_project(tmp_path, TOY_STAGES)
    r = _parallel(repo, env, "c")
    assert r.returncode == 0, r.stderr[-2000:]  # a and b each waited for the other to start: they ran together
    assert set(_locked(repo)) == {"a", "b", "c"}
    assert_nothing_reruns(repo, env, ["c"])
    r = _parallel(repo, env, "c")  # and it skips what did not change, as dvc repro does
    assert r.returncode == 0 and "Running stage" not in r.stdout and r.stdout.count("didn't change") == 3, r.stdout


def test_a_failing_stage_is_one_error_line_and_the_stage_beside_it_is_recorded(tmp_path):
    stages = dict(TOY_STAGES, a={"cmd": "sleep 1 && echo a > a.txt", "outs": ["a.txt"]},
                  b={"cmd": "echo 'error: b cannot run' >&2 && exit 3", "outs": ["b.txt"]})
    repo, env = _toy_project(tmp_path, stages)
    r = _parallel(repo, env, "c")
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and last.startswith("error: stage 'b' failed (exit status 3)"), r.stderr[-2000:]
    assert "error: b cannot run" in r.stderr  # the stage's own message, from its log
    assert set(_locked(repo)) == {"a"}  # a ran beside b and finished: recorded; b failed and c never started
    assert not (repo / "c.txt").exists()

    r = _parallel(repo, env, "no_such_stage")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: dvc: "), \
        r.stderr


@pytest.mark.slow
def test_two_micro_key_value_trainings_lock_as_a_sequential_dvc_repro_locks_them(tmp_path):
    targets = ["train@kv_arithmetic/vanilla", "train@kv_arithmetic/mB"]  # two trainings side by side
    repo, env, _ = fresh_repo(tmp_path, "kv_arithmetic")
    env = dict(env, CALM_THREADS="1")
    r = _parallel(repo, env, *targets)
    assert r.returncode == 0, r.stderr[-2000:]
    parallel = _locked(repo)
    assert set(parallel) == {"build_data@kv_arithmetic", "build_tokenizer@kv_arithmetic", *targets}
    assert_nothing_reruns(repo, env, targets)

    r = subprocess.run([str(BIN / "dvc"), "repro", "-f", *targets], cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and len(stages_run(r.stdout)) == len(parallel), r.stdout[-2000:] + r.stderr[-2000:]
    assert _locked(repo) == parallel  # every dep, param and output hash: the bytes a sequential dvc repro writes


def test_a_dvc_added_file_upstream_is_verified_not_run(tmp_path):
    # a `dvc add`ed file is a stage without a command in DVC's graph: DVC's own reproduce checks it, nothing runs it
    repo, env = _toy_project(tmp_path, {"d": {"cmd": "cat x.txt > d.txt", "deps": ["x.txt"], "outs": ["d.txt"]}})
    (repo / "x.txt").write_text("x\n")
    subprocess.run([str(BIN / "dvc"), "add", "-q", "x.txt"], cwd=repo, env=env, check=True)
    (repo / "x.txt").write_text("y\n")  # changed since: recorded anew as `dvc repro` does, never removed or run
    r = _parallel(repo, env, "d")
    assert r.returncode == 0 and "Running stage 'x.txt.dvc'" not in r.stdout, r.stdout + r.stderr[-2000:]
    assert (repo / "d.txt").read_text() == "y\n" and set(_locked(repo)) == {"d"}
    assert_nothing_reruns(repo, env, ["d"])
