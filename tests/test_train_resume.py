"""SIGKILL a training stage halfway, rerun it: it resumes from its last checkpoint and ends
with the same weights as an uninterrupted run with the same seed."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.config import compose_params, dump_params

ROOT = Path(__file__).resolve().parent.parent
STEPS = 40


def _env(workdir: Path) -> dict:
    env = dict(os.environ, WANDB_MODE="disabled", PYTHONPATH=str(ROOT), CALM_THREADS="1")
    env["CALM_PARAMS"] = str(workdir / "params.yaml")
    return env


def _prepare(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    params = compose_params([
        "preset=micro",
        f"base_models.mB.train.steps={STEPS}",
        "base_models.mB.train.save_steps=5",
        "base_models.mB.train.batch_size=16",
    ])
    dump_params(params, workdir / "params.yaml")
    for args in (["pipeline.build_data", "kv_arithmetic"], ["pipeline.tokenizer", "kv_arithmetic"]):
        subprocess.run([sys.executable, "-m", *args], cwd=workdir, env=_env(workdir), check=True, capture_output=True)


def _train(workdir: Path, **kw):
    return subprocess.Popen([sys.executable, "-m", "pipeline.train", "base", "mB"], cwd=workdir, env=_env(workdir),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def _weights(workdir: Path) -> dict:
    return load_file(str(workdir / "models" / "mB" / "model.safetensors"))


def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    _prepare(straight)
    _prepare(killed)
    p = _train(straight)
    out = p.communicate(timeout=300)[0].decode()
    assert p.returncode == 0, out

    p = _train(killed)
    ckpt_root = killed / "models" / ".checkpoints"
    deadline = time.time() + 300
    while time.time() < deadline:
        done = [c for c in ckpt_root.glob("mB-*/checkpoint-*") if (c / "trainer_state.json").exists()]
        if any(int(c.name.split("-")[1]) >= STEPS // 2 for c in done):
            break
        if p.poll() is not None:
            pytest.fail("training finished before it could be killed: " + p.stdout.read().decode()[-2000:])
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (killed / "models" / "mB").exists(), "a killed stage must leave no output that looks done"

    p = _train(killed)
    out = p.communicate(timeout=300)[0].decode()
    assert p.returncode == 0, out
    assert "resuming from" in out
    a, b = _weights(straight), _weights(killed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    ia = (straight / "models/mB/train_info.json").read_text()
    ib = (killed / "models/mB/train_info.json").read_text()
    assert '"steps": %d' % STEPS in ia and '"steps": %d' % STEPS in ib
