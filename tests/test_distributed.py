"""Several processes on one engine (pipeline/distributed.py), proven on this CPU: 2 processes under torchrun,
gloo, micro sizes. A recipe means the same on 2 processes as on 1 (the global batch is the recipe's batch_size,
the data order the seed's); only the main process writes, and a killed process leaves nothing that looks done;
sharded evaluation writes the very predictions one process writes; a 2-process run killed by SIGKILL and resumed
ends with the weights of an uninterrupted 2-process run."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.errors import PipelineError
from pipeline.params import compose_params, dump_params

ROOT = Path(__file__).resolve().parent.parent
WORLD = "kv_arithmetic"
CALM = f"worlds.{WORLD}.models.calm"
# 4 steps of batch 12 over the composition's 40 rows (D_C and as many anchor-replay rows): step 4 is the epoch's
# short last batch (4 rows), which 2 processes must share as one process trains it (not top it up with other
# rows). No dropout: each process draws its own masks, so with dropout 2 processes train the same recipe with
# other masks, not the same numbers.
COMPOSITION = ["preset=micro", f"worlds.{WORLD}.evaluation.batch_size=4", f"{CALM}.train.batch_size=12",
               f"{CALM}.composition.attention_dropout=0", f"{CALM}.composition.augmenting_dropout=0"]
# Two processes sum their gradients in another order than one: fp32 rounding only. Measured here (batch 8): the
# logged losses agree to 1e-8 relative, the weights to 5.4e-7 absolute.
LOSS_RTOL = 1e-6
WEIGHT_ATOL = 1e-5


def _env(workdir: Path, **extra) -> dict:
    return {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT), "CALM_THREADS": "1",
            "OMP_NUM_THREADS": "1", "CALM_PARAMS": str(workdir / "params.yaml"), **extra}


def _run(workdir: Path, *args, processes: int = 1, **env) -> subprocess.CompletedProcess:
    launcher = [] if processes == 1 else ["-m", "torch.distributed.run", "--standalone",
                                          "--nproc_per_node", str(processes)]
    return subprocess.run([sys.executable, *launcher, *args], cwd=workdir, env=_env(workdir, **env),
                          capture_output=True, text=True, timeout=600)


def _in_process(workdir: Path, module: str, *argv: str) -> None:
    """A stage's main() in this process (one process: what a subprocess would do, without starting Python again)."""
    import importlib

    cwd, environ = os.getcwd(), dict(os.environ)
    os.chdir(workdir)
    os.environ.update(CALM_PARAMS=str(workdir / "params.yaml"), WANDB_MODE="disabled")
    try:
        importlib.import_module(module).main(list(argv))
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The micro key-value world's data, tokenizer and the composition's bases (mA starts from vanilla), built by
    one process: this one."""
    workdir = tmp_path_factory.mktemp("distributed") / "template"
    workdir.mkdir()
    dump_params(compose_params(COMPOSITION), workdir / "params.yaml")
    _in_process(workdir, "pipeline.build_data", WORLD)
    _in_process(workdir, "pipeline.tokenizer", WORLD)
    for m in ("vanilla", "mA", "mB"):
        _in_process(workdir, "pipeline.train", f"{WORLD}/{m}")
    return workdir


@pytest.fixture(scope="module")
def trained(template):
    """The composition trained by 1 process and by 2 (torchrun, gloo)."""
    runs = {}
    for n in (1, 2):
        workdir = template.parent / f"calm-{n}"
        shutil.copytree(template, workdir)
        r = _run(workdir, "-m", "pipeline.train", f"{WORLD}/calm", processes=n)
        assert r.returncode == 0, r.stderr[-3000:]
        runs[n] = (workdir, r)
    return runs


def _model(workdir: Path) -> Path:
    return workdir / "models" / WORLD / "calm"


def test_two_processes_train_the_one_process_recipe(trained):
    (one, _), (two, r) = trained[1], trained[2]
    info1 = json.loads((_model(one) / "train_info.json").read_text())
    info2 = json.loads((_model(two) / "train_info.json").read_text())
    assert info2.pop("processes") == 2 and "processes" not in info1
    h1, h2 = info1.pop("loss_history"), info2.pop("loss_history")
    assert [s for s, _ in h1] == [s for s, _ in h2] == [1, 2, 3, 4]
    for (_, a), (_, b) in zip(h1, h2):  # the same rows per step (step 3: the epoch's short batch, shared)
        assert b == pytest.approx(a, rel=LOSS_RTOL)
    assert info2.pop("train_loss") == pytest.approx(info1.pop("train_loss"), rel=LOSS_RTOL)
    assert info2.pop("final_logged_loss") == pytest.approx(info1.pop("final_logged_loss"), rel=LOSS_RTOL)
    assert info1 == info2  # the same counts, steps, seed, float path
    w1, w2 = load_file(str(_model(one) / "model.safetensors")), load_file(str(_model(two) / "model.safetensors"))
    assert w1.keys() == w2.keys()
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=0, atol=WEIGHT_ATOL, msg=k)
    # one line of output from the main process only
    assert r.stdout.count("kv_arithmetic/calm: train_loss=") == 1, r.stdout
    assert r.stderr.count("kv_arithmetic/calm: kind composition") == 1


def test_two_processes_deal_micro_batches_as_one_process_trains_the_batch(template, trained, tmp_path):
    """micro_batches: 2 on 2 processes: the batch_rebalance sampler deals each batch of 12 rows over 2 processes x 2
    micro-batches (per-device batch 3); same rows per step, so the one-process run's losses and weights."""
    workdir = tmp_path / "micro"
    shutil.copytree(template, workdir)
    dump_params(compose_params([*COMPOSITION, f"+worlds.{WORLD}.micro_batches=2"]), workdir / "params.yaml")
    r = _run(workdir, "-m", "pipeline.train", f"{WORLD}/calm", processes=2)
    assert r.returncode == 0, r.stderr[-3000:]
    one = _model(trained[1][0])
    info1, info2 = (json.loads((d / "train_info.json").read_text()) for d in (one, _model(workdir)))
    assert info2["micro_batches"] == 2 and info2["processes"] == 2
    for (s1, a), (s2, b) in zip(info1["loss_history"], info2["loss_history"], strict=True):
        assert s1 == s2 and b == pytest.approx(a, rel=LOSS_RTOL)
    w1, w2 = load_file(str(one / "model.safetensors")), load_file(str(_model(workdir) / "model.safetensors"))
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=0, atol=WEIGHT_ATOL, msg=k)


def test_only_the_main_process_writes(trained):
    two = trained[2][0]
    models = two / "models"
    # the model directory, its run log, no temporary directory of a second writer, no checkpoints left behind
    assert not list(models.rglob(".*.tmp")), list(models.rglob(".*.tmp"))
    assert not list(models.glob(".checkpoints/*"))
    assert sorted(p.name for p in _model(two).iterdir()) == sorted(p.name for p in _model(trained[1][0]).iterdir())


def test_a_killed_process_leaves_nothing_that_looks_done(template, tmp_path):
    workdir = tmp_path / "killed"
    shutil.copytree(template, workdir)
    r = _run(workdir, str(ROOT / "tests" / "_kill_at.py"), "step", "3", f"{WORLD}/calm", processes=2,
             CALM_KILL_RANK="1")
    assert r.returncode != 0
    assert not _model(workdir).exists(), "a killed run must leave no model that looks done"
    assert not list((workdir / "models").rglob(".*.tmp"))
    # the checkpoint of step 2 is whole (both processes' RNG states), so a rerun resumes from it
    checkpoints = sorted((workdir / "models" / ".checkpoints").glob("*/checkpoint-2"))
    assert checkpoints and {"rng_state_0.pth", "rng_state_1.pth"} <= {p.name for p in checkpoints[0].iterdir()}


def test_sharded_evaluation_writes_the_one_process_predictions(trained):
    """1 process, then 2 started by the runtime (runtime.processes: 2 -> pipeline.launch -> accelerate launch)."""
    workdir = trained[1][0]
    dump_params(compose_params([*COMPOSITION, "+runtime.processes=2"]), workdir / "params-2.yaml")
    outputs = {}
    for n in (1, 2):
        if n == 1:
            r = _run(workdir, "-m", "pipeline.evaluate", f"{WORLD}/calm")
        else:
            r = _run(workdir, "-m", "pipeline.launch", "pipeline.evaluate", f"{WORLD}/calm",
                     CALM_PARAMS=str(workdir / "params-2.yaml"))
        assert r.returncode == 0, r.stderr[-3000:]
        reports = workdir / "reports" / WORLD
        outputs[n] = ((reports / "predictions" / "calm.jsonl").read_bytes(), (reports / "metrics" / "calm.json").read_bytes())
    assert outputs[2][0] == outputs[1][0] and outputs[2][1] == outputs[1][1]
    assert len(outputs[1][0].splitlines()) == 65  # 20 + 20 + 20 + 5 rows, in batches of 4 over 2 processes


@pytest.mark.slow
def test_two_processes_resume_after_sigkill(template, trained, tmp_path):
    """rank 1 SIGKILLed after step 3 (torchrun stops rank 0), rerun under 2 processes: it resumes from
    checkpoint-2 and ends with the uninterrupted 2-process run's weights and train_info, bitwise."""
    workdir = tmp_path / "resumed"
    shutil.copytree(template, workdir)
    r = _run(workdir, str(ROOT / "tests" / "_kill_at.py"), "step", "3", f"{WORLD}/calm", processes=2,
             CALM_KILL_RANK="1")
    assert r.returncode != 0 and not _model(workdir).exists()
    r = _run(workdir, "-m", "pipeline.train", f"{WORLD}/calm", processes=2)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resuming from" in r.stderr
    straight = _model(trained[2][0])
    got, expected = load_file(str(_model(workdir) / "model.safetensors")), load_file(str(straight / "model.safetensors"))
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in got)
    assert (_model(workdir) / "train_info.json").read_text() == (straight / "train_info.json").read_text()


def test_a_batch_that_cannot_be_shared_is_one_line():
    from pipeline.training.trainer import trainer_arguments

    tcfg = {"steps": 4, "batch_size": 8, "lr": 1e-3}
    with pytest.raises(PipelineError, match="train.batch_size 8 cannot be shared by 3 processes x 1 micro-batches"):
        trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none", processes=3)
    with pytest.raises(PipelineError, match="by 2 processes x 8 micro-batches"):
        trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none", micro_batches=8, processes=2)
    one = trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none")
    assert "accelerator_config" not in one and one["per_device_train_batch_size"] == 8  # one process: as before
    two = trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none", processes=2)
    assert two["accelerator_config"] == {"split_batches": True} and two["per_device_train_batch_size"] == 8
    mb = trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none", micro_batches=2, processes=2)
    assert mb["per_device_train_batch_size"] == 2 and mb["gradient_accumulation_steps"] == 2


def test_a_gpu_runtime_without_a_gpu_is_one_line_before_anything_starts(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("checks the message a machine without a GPU gives")
    dump_params(compose_params(["preset=micro", "runtime=multi_gpu"]), tmp_path / "params.yaml")
    r = _run(tmp_path, "-m", "pipeline.launch", "pipeline.train", f"{WORLD}/calm")
    assert r.returncode == 2
    assert r.stderr.strip() == "error: runtime.device is cuda but torch sees no GPU here: compose with runtime=cpu"
    assert not (tmp_path / "models").exists()


def test_the_launcher_comes_from_the_runtime(monkeypatch):
    from pipeline.launch import command

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert command("pipeline.train", ["w/m"], {"device": "cpu"}) == [sys.executable, "-m", "pipeline.train", "w/m"]
    two = command("pipeline.evaluate", ["w/m"], {"device": "cpu", "processes": 2})
    assert two[1:5] == ["launch", "--multi_gpu", "--num_processes", "2"] and two[-3:] == ["-m", "pipeline.evaluate", "w/m"]
    monkeypatch.setenv("WORLD_SIZE", "2")  # inside torchrun / accelerate launch already: run the stage here
    assert command("pipeline.train", ["w/m"], {"device": "cpu", "processes": 2})[1:3] == ["-m", "pipeline.train"]
    with pytest.raises(PipelineError, match="runtime.processes must be"):
        command("pipeline.train", ["w/m"], {"device": "cpu", "processes": 0})
