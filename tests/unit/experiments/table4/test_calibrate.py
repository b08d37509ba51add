"""experiments/table4/calibrate.py --models-from: it scores a checkout's models only when that checkout was built
under the code conf composed here, and otherwise stops with one line (never links or trains anything)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.params import compose_params, dump_params

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / "experiments" / "table4" / "calibrate.py"


def run_calibrate(workdir: Path, checkout: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, WANDB_MODE="disabled", OMP_NUM_THREADS="1", CALM_THREADS="1")
    return subprocess.run([sys.executable, str(SCRIPT), str(workdir), "--models-from", str(checkout), *overrides],
                          capture_output=True, text=True, env=env, timeout=300)


def make_checkout(path: Path, *overrides: str, built: bool = True) -> Path:
    """A stand-in for a checkout where `dvc repro` ran: its params.yaml and (if built) data/code, models/code."""
    path.mkdir(parents=True)
    dump_params(compose_params(["world=[code]", *overrides]), str(path / "params.yaml"))
    if built:
        (path / "data" / "code").mkdir(parents=True)
        (path / "models" / "code").mkdir(parents=True)
    return path


@pytest.mark.parametrize("case, expected", [
    ("no_params", "params.yaml not found"),
    ("other_conf", "differs from the one composed here"),
    ("not_built", "missing (run dvc repro there first)"),
])
def test_refuses_a_checkout_it_cannot_score(tmp_path, case, expected):
    if case == "no_params":
        checkout = tmp_path / "checkout"
        checkout.mkdir()
    elif case == "other_conf":
        checkout = make_checkout(tmp_path / "checkout", "worlds.code.models.calm.seed=7")
    else:
        checkout = make_checkout(tmp_path / "checkout", built=False)
    result = run_calibrate(tmp_path / "work", checkout)
    assert result.returncode != 0
    assert expected in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "work" / "models" / "code").exists()


def test_links_a_checkout_built_under_the_same_conf(tmp_path):
    checkout = make_checkout(tmp_path / "checkout")
    result = run_calibrate(tmp_path / "work", checkout)   # no --evaluate: links, scores nothing
    assert result.returncode == 0, result.stderr
    for sub in ("data/code", "models/code"):
        link = tmp_path / "work" / sub
        assert link.is_symlink() and link.resolve() == (checkout / sub).resolve()
