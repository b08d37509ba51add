"""A hostile battery against the sandbox's verdict: programs that solve nothing and try to be
scored as passing anyway, through the harness's own machinery rather than the task.

Threat model (pipeline/benchmarks/README.md, "Sandbox"): the program may run any Python,
ctypes included, in its own process; the verdict is written by the test process, which
holds the tests, the nonce and the status pipe and runs no code of the program. Each attack
below is one way a program sharing an interpreter with its tests could forge a pass (exit
paths, builtins and module attributes a runner uses, I/O and descriptors, atexit and
excepthooks, signals, threads and forks, frames and gc, the channel itself, the objects
the tests hand over). Every one must score 0 on both test styles (MBPP's top-level asserts,
HumanEval's check(candidate)), while the correct solution scores 1 in the same run.

Not covered, by design (a property of the benchmarks, not of the harness, and the same in a
plain `python` run): an object whose __eq__ is always true, or a global that shadows a
builtin the tests call (test_known_benchmark_property_is_documented pins it down).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.sandbox.harness import SandboxLimits, run_program, run_programs
from tests.support.sandbox_attacks import (CALLBACK_CORRECT, CALLBACK_TESTS, CORRECT, HUMANEVAL_TESTS,
                             MBPP_TESTS, jobs)

LIMITS = SandboxLimits(timeout_s=4.0)
REPO_ROOT = Path(__file__).resolve().parents[3]


def test_hostile_battery_scores_zero_and_the_correct_solution_one():
    jobs_, names = jobs()
    controls = [(CORRECT, MBPP_TESTS), (CORRECT, HUMANEVAL_TESTS),
                (CALLBACK_CORRECT, CALLBACK_TESTS)]
    start = time.monotonic()
    results = run_programs(controls + jobs_, LIMITS, workers=2, progress=False)
    elapsed = time.monotonic() - start
    for (program, tests), result in zip(controls, results):
        assert result.passed, (tests, result.output[-500:])
    false_passes = [(name, r.output[-300:]) for name, r in zip(names, results[len(controls):])
                    if r.passed]
    assert not false_passes, false_passes
    # The escalation attempt found nothing to reach: it failed its own assert, not a probe.
    for name, result in zip(names, results[len(controls):]):
        assert "reached " not in result.output and "found a nonce" not in result.output \
            and "attached to" not in result.output and "proc reachable" not in result.output, \
            (name, result.output[-500:])
    assert len(jobs_) >= 50 and elapsed < 60, (len(jobs_), elapsed)


def test_known_benchmark_property_is_documented():
    """An always-equal object passes HumanEval-style asserts: here and in a plain run alike."""
    program = ("class Yes:\n    def __eq__(self, other):\n        return True\n"
               "def add(a, b):\n    return Yes()\n")
    assert run_program(program, MBPP_TESTS, LIMITS).passed
    plain = subprocess.run([sys.executable, "-c", program + MBPP_TESTS], capture_output=True)
    assert plain.returncode == 0


def test_environment_is_cleared(monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "secret-wandb-key")
    monkeypatch.setenv("HF_TOKEN", "secret-hf-token")
    program = ("import os\ndef env():\n    return dict(os.environ)\n"
               "seen = open('/proc/self/environ', 'rb').read() if os.path.exists("
               "'/proc/self/environ') else b''\n")
    tests = ("e = env()\nassert 'WANDB_API_KEY' not in e and 'HF_TOKEN' not in e, e\n"
             "assert b'secret' not in seen\n"
             "import os\nassert 'WANDB_API_KEY' not in os.environ\n"
             "assert sorted(e) == ['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR'], sorted(e)\n")
    result = run_program(program, tests, LIMITS)
    assert result.passed, result.output


_REDUCED_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
from pipeline.sandbox.harness import run_programs, isolation_level, SandboxLimits
assert isolation_level() == "reduced", isolation_level()
sys.path.insert(0, sys.argv[1] + "/tests/support")
import sandbox_attacks as battery
jobs, names = battery.jobs()
controls = [(battery.CORRECT, battery.MBPP_TESTS), (battery.CORRECT, battery.HUMANEVAL_TESTS),
            (battery.CALLBACK_CORRECT, battery.CALLBACK_TESTS)]
results = run_programs(controls + jobs, SandboxLimits(timeout_s=4.0), workers=2, progress=False)
bad = [c for c, r in zip(controls, results) if not r.passed]
false = [n for n, r in zip(names, results[len(controls):]) if r.passed]
print("controls failing:", len(bad), "false passes:", false, "of", len(jobs))
sys.exit(1 if bad or false else 0)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv")
                    or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root to drop to an unprivileged user, setpriv, /usr/bin/python3")
def test_reduced_mode_without_root_gives_the_same_verdicts():
    """The battery again, as `nobody` (uid 65534): the sandbox's no-root mode.

    The project's interpreter lives under /root (unreachable for nobody), so this runs the
    system Python of the same version, which needs nothing beyond the standard library.
    """
    version = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
    if version != str(tuple(sys.version_info[:2])):
        pytest.skip(f"/usr/bin/python3 is {version}, not this interpreter's version")
    with tempfile.TemporaryDirectory(prefix="calm_reduced_", dir="/tmp") as folder:
        _run_battery_as_nobody(Path(folder))


def _run_battery_as_nobody(folder):
    copy = folder / "repo"
    for part in ("pipeline/__init__.py", "pipeline/float_path.py", "pipeline/errors.py", "pipeline/benchmarks",
                 "pipeline/sandbox", "tests/support/sandbox_attacks.py"):
        source = REPO_ROOT / part
        target = copy / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)
    (copy / "pipeline/benchmarks/__init__.py").write_text("")  # no heavy package imports
    subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    run = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "/usr/bin/python3", "-I", "-c", _REDUCED_SCRIPT, str(copy)],
        capture_output=True, text=True, env=env, cwd="/", timeout=300)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
