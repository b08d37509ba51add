"""SIGKILL a training stage at any instant, rerun it: it resumes from the newest complete checkpoint and ends
with the same weights and train_info (its loss over all the steps) as an uninterrupted run with the same seed,
and a killed stage never leaves an output that looks done. The kill points are deterministic
(tests/support/_kill_at.py), including mid-checkpoint writes."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.params import compose_params, dump_params

ROOT = Path(__file__).resolve().parents[2]
STEPS = 40
WORLD = "kv_arithmetic"


def _env(workdir: Path) -> dict:
    return dict(os.environ, WANDB_MODE="disabled", PYTHONPATH=str(ROOT), CALM_THREADS="1",
                CALM_PARAMS=str(workdir / "params.yaml"))


def _run(workdir: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workdir, env=_env(workdir), capture_output=True, text=True)


def _prepare(workdir: Path, model: str, kind: str) -> None:
    """params with 40 steps and a checkpoint every 5, the world's data and tokenizer, and the model's bases."""
    workdir.mkdir(parents=True)
    block = f"worlds.{WORLD}.models.{model}"
    overrides = ["preset=micro", f"{block}.train.steps={STEPS}", f"{block}.train.save_steps=5", f"{block}.train.batch_size=16"]
    if kind == "base":  # length-sorted micro-batches: the resume must restore the batch sampler's order too
        overrides += [f"+worlds.{WORLD}.micro_batches=4"]
    if kind == "composition":  # dropout in the cross-attention and on mA's states: the resume must restore RNG state
        overrides += [f"{block}.composition.attention_dropout=0.3", f"{block}.composition.augmenting_dropout=0.3"]
    params = compose_params(overrides)
    # in this process (the stage entry points, as tests/support/stage_chain.py runs them): only the runs compared below,
    # the killed one, its resume and the uninterrupted one, are processes of their own
    from pipeline import build_data, tokenizer, train

    # written from here, the checkout: the stage maps beside params.yaml name every declared world's benchmark files,
    # which are found relative to the checkout (../shared/benchmarks), not to the workdir
    dump_params(params, workdir / "params.yaml")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        for k in ("WANDB_MODE", "CALM_THREADS", "CALM_PARAMS"):
            mp.setenv(k, _env(workdir)[k])
        build_data.main([WORLD])
        tokenizer.main([WORLD])
        if kind == "composition":
            for base in ("vanilla", "mA", "mB"):
                train.main([f"{WORLD}/{base}"])


def _weights(workdir: Path, model: str) -> dict:
    return load_file(str(workdir / "models" / WORLD / model / "model.safetensors"))


def _train_info(workdir: Path, model: str) -> str:
    """The model's train_info.json as bytes on disk: a resumed run writes the very file an uninterrupted one does (its
    time and the checkpoint it resumed from go to models/.runs/, outside the DVC output), so the model's DVC hash is
    the same and no downstream stage reruns."""
    return (workdir / "models" / WORLD / model / "train_info.json").read_text()


_PREPARED: dict = {}


def _prepared(tmp_path_factory, model: str, kind: str):
    """A prepared workdir and the weights of the same stage run without interruption (once per kind)."""
    if kind not in _PREPARED:
        template = tmp_path_factory.mktemp(kind) / "template"
        _prepare(template, model, kind)
        straight = template.parent / "straight"
        shutil.copytree(template, straight)
        r = _run(straight, "-m", "pipeline.train", f"{WORLD}/{model}")
        assert r.returncode == 0, r.stderr[-2000:]
        _PREPARED[kind] = (template, _weights(straight, model), _train_info(straight, model))
    return _PREPARED[kind]


# (model, kind, the kill points one after another). Kill points: between checkpoints; with checkpoint-20's weights
# written but not its state; with a truncated trainer_state.json; while the finished model is written. One workdir
# per kind is killed at each point in turn, each rerun resuming from what the kill before left (so each kill point
# is exercised as before, at one process per point rather than two), then rerun to the end. The base model trains
# on length-sorted micro-batches (the resume must restore the batch sampler's order; a kind of its own before, one
# stage run and one kill fewer now), the composition on whole batches with dropout in its cross-attention (the resume
# must restore the RNG state); it covers the checkpoint writes again.
KILLS = [("mB", "base", (("step", 12), ("checkpoint", 20), ("state", 25), ("final", STEPS))),
         ("calm", "composition", (("checkpoint", 20), ("state", 25)))]


@pytest.mark.slow
@pytest.mark.parametrize("model,kind,kills", KILLS, ids=[k[1] for k in KILLS])
def test_sigkill_then_resume_equals_uninterrupted(tmp_path_factory, tmp_path, model, kind, kills):
    template, expected, expected_info = _prepared(tmp_path_factory, model, kind)
    workdir = tmp_path / "killed"
    shutil.copytree(template, workdir)
    for n, (point, step) in enumerate(kills):
        r = _run(workdir, str(ROOT / "tests" / "support" / "_kill_at.py"), point, str(step), f"{WORLD}/{model}")
        assert r.returncode == -9, f"expected a SIGKILL at {point} {step}: rc={r.returncode} {r.stderr[-1500:]}"
        assert not (workdir / "models" / WORLD / model).exists(), "a killed stage must leave no output that looks done"
        assert n == 0 or "resuming from" in r.stderr, f"the rerun after the kill before {point} {step} did not resume"
        checkpoints = sorted((workdir / "models" / ".checkpoints").glob("*/checkpoint-*"))
        if point in ("checkpoint", "state"):  # the kill left an incomplete checkpoint-<step> behind
            torn = [c for c in checkpoints if c.name == f"checkpoint-{step}"]
            assert torn and not _is_complete(torn[0])

    r = _run(workdir, "-m", "pipeline.train", f"{WORLD}/{model}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resuming from" in r.stderr
    got = _weights(workdir, model)
    assert got.keys() == expected.keys()
    for k in got:
        assert torch.equal(got[k], expected[k]), k
    info = _train_info(workdir, model)
    assert json.loads(info)["steps"] == STEPS
    # the whole run's train_loss and logged losses, not the resumed steps', byte for byte (the model's DVC hash)
    assert info == expected_info


def _is_complete(checkpoint: Path) -> bool:
    try:
        return json.loads((checkpoint / "trainer_state.json").read_text())["global_step"] == int(checkpoint.name.split("-")[1])
    except (OSError, ValueError, KeyError):
        return False
