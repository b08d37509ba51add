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


# (stage kind, name, its params block): a base model, and a composition (with dropout in its cross-attention
# and on mA's states, so the resumed run must also restore the random state).
TARGETS = [("base", "mB", "base_models.mB"), ("composition", "calm", "compositions.calm")]


def _prepare(workdir: Path, kind: str, block: str) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    overrides = ["preset=micro", f"{block}.train.steps={STEPS}", f"{block}.train.save_steps=5",
                 f"{block}.train.batch_size=16"]
    if kind == "composition":
        overrides += [f"{block}.attention_dropout=0.3", f"{block}.augmenting_dropout=0.3"]
    dump_params(compose_params(overrides), workdir / "params.yaml")
    steps = [["pipeline.build_data", "kv_arithmetic"], ["pipeline.tokenizer", "kv_arithmetic"]]
    if kind == "composition":  # its frozen bases first (a few steps each in the micro preset)
        steps += [["pipeline.train", "base", base] for base in ("vanilla", "mA", "mB")]
    for args in steps:
        subprocess.run([sys.executable, "-m", *args], cwd=workdir, env=_env(workdir), check=True, capture_output=True)


def _train(workdir: Path, kind: str, name: str, **kw):
    return subprocess.Popen([sys.executable, "-m", "pipeline.train", kind, name], cwd=workdir, env=_env(workdir),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def _weights(workdir: Path, name: str) -> dict:
    return load_file(str(workdir / "models" / name / "model.safetensors"))


@pytest.mark.parametrize("kind,name,block", TARGETS, ids=[t[1] for t in TARGETS])
def test_sigkill_then_resume_equals_uninterrupted(tmp_path, kind, name, block):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    _prepare(straight, kind, block)
    _prepare(killed, kind, block)
    p = _train(straight, kind, name)
    out = p.communicate(timeout=300)[0].decode()
    assert p.returncode == 0, out

    p = _train(killed, kind, name)
    ckpt_root = killed / "models" / ".checkpoints"
    deadline = time.time() + 300
    while time.time() < deadline:
        done = [c for c in ckpt_root.glob(f"{name}-*/checkpoint-*") if (c / "trainer_state.json").exists()]
        if any(int(c.name.split("-")[1]) >= STEPS // 2 for c in done):
            break
        if p.poll() is not None:
            pytest.fail("training finished before it could be killed: " + p.stdout.read().decode()[-2000:])
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (killed / "models" / name).exists(), "a killed stage must leave no output that looks done"

    p = _train(killed, kind, name)
    out = p.communicate(timeout=300)[0].decode()
    assert p.returncode == 0, out
    assert "resuming from" in out
    a, b = _weights(straight, name), _weights(killed, name)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    ia = (straight / "models" / name / "train_info.json").read_text()
    ib = (killed / "models" / name / "train_info.json").read_text()
    assert '"steps": %d' % STEPS in ia and '"steps": %d' % STEPS in ib
