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

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.fixture(scope="module")
def killed(template):
    """A 2-process training of the composition whose rank 1 was SIGKILLed after step 3 (torchrun then stops rank 0):
    the workdir it left, read as it is by one test and resumed in a copy by another."""
    workdir = template.parent / "killed"
    shutil.copytree(template, workdir)
    r = _run(workdir, str(ROOT / "tests" / "support" / "_kill_at.py"), "step", "3", f"{WORLD}/calm", processes=2,
             CALM_KILL_RANK="1")
    assert r.returncode != 0
    return workdir


def test_a_killed_process_leaves_nothing_that_looks_done(killed):
    workdir = killed
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
def test_two_processes_resume_after_sigkill(killed, trained, tmp_path):
    """The killed run (rank 1 SIGKILLed after step 3), rerun under 2 processes: it resumes from checkpoint-2 and
    ends with the uninterrupted 2-process run's weights and train_info, bitwise."""
    workdir = tmp_path / "resumed"
    shutil.copytree(killed, workdir)
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


def test_a_launcher_group_of_one_process_is_left_cleanly(tmp_path, monkeypatch):
    """`accelerate launch --num_processes 1` (runtime=fsdp on one GPU) joins a process group of one: a stage's
    end destroys it, so torch does not warn that it leaks (seen on an H200, before this)."""
    import torch.distributed as dist

    from pipeline import distributed

    monkeypatch.setenv("WORLD_SIZE", "1")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        distributed.finish()
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


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


# ----- runtime=fsdp: a composition's frozen bases sharded (FSDP2) ----------------------------------------------
# On this CPU: the runtime's GPU settings swapped for the CPU's, and tests/support/_fsdp_on_cpu.py lifting accelerate's
# GPU-only gate (and the pipeline's refusal that mirrors it), so that torch's FSDP2 shards over gloo.
SHARDED = [*COMPOSITION, "runtime=fsdp", "runtime.device=cpu", "runtime.precision=fp32", "runtime.dataloader_workers=0",
           "runtime.processes=2"]
FSDP_ON_CPU = str(ROOT / "tests" / "support" / "_fsdp_on_cpu.py")


def _gates_lifted_in_every_process(directory: Path) -> str:
    """A PYTHONPATH whose sitecustomize lifts the gates in each Python process (for the stage that
    `python -m pipeline.launch` starts through `accelerate launch`)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests' / 'support')!r})\nimport _fsdp_on_cpu\n"
        "_fsdp_on_cpu.lift_gates()\n")
    return f"{ROOT}{os.pathsep}{directory}"


def _sharded_copy(template: Path, workdir: Path) -> Path:
    shutil.copytree(template, workdir)
    dump_params(compose_params(SHARDED), workdir / "params.yaml")
    return workdir


@pytest.fixture(scope="module")
def sharded(template):
    """The composition trained under runtime=fsdp by 2 processes, started as a GPU machine starts them:
    `python -m pipeline.launch` -> `accelerate launch --config_file launch/fsdp_one_node.yaml --num_processes 2`."""
    workdir = _sharded_copy(template, template.parent / "calm-fsdp")
    r = _run(workdir, "-m", "pipeline.launch", "pipeline.train", f"{WORLD}/calm",
             PYTHONPATH=_gates_lifted_in_every_process(template.parent / "gates-lifted"))
    assert r.returncode == 0, r.stderr[-3000:]
    return workdir


@pytest.fixture(scope="module")
def sharded_killed(template):
    """A runtime=fsdp run whose rank 1 was SIGKILLed after step 3: checkpoint-2 is its last."""
    workdir = _sharded_copy(template, template.parent / "calm-fsdp-killed")
    r = _run(workdir, FSDP_ON_CPU, "step", "3", f"{WORLD}/calm", processes=2, CALM_KILL_RANK="1")
    assert r.returncode != 0 and not _model(workdir).exists()
    return workdir


def test_sharded_training_ends_where_one_process_does(trained, sharded):
    """The same files as one process saves (the composition's parameters only), its losses and weights up to fp32
    summation order: measured here, losses within 7e-8 relative, weights within 5.3e-8."""
    one, two = _model(trained[1][0]), _model(sharded)
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())
    assert (two / "config.json").read_bytes() == (one / "config.json").read_bytes()
    w1, w2 = load_file(str(one / "model.safetensors")), load_file(str(two / "model.safetensors"))
    assert w2.keys() == w1.keys() and all(k.startswith("bridges.") for k in w2)
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=0, atol=WEIGHT_ATOL, msg=k)
    info1, info2 = (json.loads((d / "train_info.json").read_text()) for d in (one, two))
    assert info2.pop("processes") == 2 and info2.pop("sharded") == "fsdp2"
    for (s1, a), (s2, b) in zip(info1.pop("loss_history"), info2.pop("loss_history"), strict=True):
        assert s1 == s2 and b == pytest.approx(a, rel=LOSS_RTOL)
    assert info2.pop("train_loss") == pytest.approx(info1.pop("train_loss"), rel=LOSS_RTOL)
    assert info2.pop("final_logged_loss") == pytest.approx(info1.pop("final_logged_loss"), rel=LOSS_RTOL)
    assert info1 == info2
    assert not list((sharded / "models").glob(".checkpoints/*"))


def test_a_sharded_checkpoint_holds_each_process_shard_and_only_the_composition_optimizer(sharded_killed):
    import torch.distributed.checkpoint as dcp

    from pipeline.training.trainer import _incomplete

    (checkpoint,) = (sharded_killed / "models" / ".checkpoints").glob("*/checkpoint-2")
    names = {p.name for p in checkpoint.iterdir()}
    assert {"pytorch_model_fsdp_0", "optimizer_0", "rng_state_0.pth", "rng_state_1.pth"} <= names
    assert not names & {"model.safetensors", "optimizer.pt"}  # Trainer's FSDP path, not the data-parallel one
    for part in ("pytorch_model_fsdp_0", "optimizer_0"):  # a shard from each process
        assert {p.name for p in (checkpoint / part).glob("*.distcp")} == {"__0_0.distcp", "__1_0.distcp"}
    weights = set(dcp.FileSystemReader(str(checkpoint / "pytorch_model_fsdp_0")).read_metadata().state_dict_metadata)
    optimizer = dcp.FileSystemReader(str(checkpoint / "optimizer_0")).read_metadata().state_dict_metadata
    # the model's shards hold the bases too (its whole sharded state dict), the optimizer the composition's only
    assert any(k.startswith("model.anchor.") for k in weights) and any(k.startswith("model.augmenting.") for k in weights)
    trained = {k.removeprefix("optimizer.state.").rsplit(".", 1)[0] for k in optimizer if k.startswith("optimizer.state.")}
    assert trained == {k.removeprefix("model.") for k in weights if k.startswith("model.bridges.")}
    assert _incomplete(checkpoint) is None
    (checkpoint / "optimizer_0" / ".metadata").rename(checkpoint / "optimizer_0" / "metadata.partial")
    try:  # a kill before the coordinator wrote the optimizer's .metadata: not resumable
        assert _incomplete(checkpoint) == "optimizer_0/.metadata missing"
    finally:
        (checkpoint / "optimizer_0" / "metadata.partial").rename(checkpoint / "optimizer_0" / ".metadata")


@pytest.mark.slow
def test_a_sharded_run_resumes_after_sigkill_to_the_uninterrupted_weights(sharded_killed, sharded, tmp_path):
    workdir = tmp_path / "resumed"
    shutil.copytree(sharded_killed, workdir)
    r = _run(workdir, FSDP_ON_CPU, f"{WORLD}/calm", processes=2)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resuming from" in r.stderr and "checkpoint-2" in r.stderr
    got, expected = (load_file(str(_model(d) / "model.safetensors")) for d in (workdir, sharded))
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in got)
    assert (_model(workdir) / "train_info.json").read_text() == (_model(sharded) / "train_info.json").read_text()


def test_the_wrap_policy_makes_each_base_layer_a_unit_and_leaves_the_composition_whole():
    """accelerate's TRANSFORMER_BASED_WRAP wraps the classes of the model's _no_split_modules: every decoder layer
    of the anchor and of an mA of another family; the cross-attention stays in the root unit."""
    from accelerate.utils import FullyShardedDataParallelPlugin
    from accelerate.utils.fsdp_utils import fsdp2_prepare_auto_wrap_policy

    from pipeline.composition import CALMForCausalLM
    from tests.support.tiny_models import tiny_model

    calm = CALMForCausalLM.from_models(tiny_model("llama", layers=4), tiny_model("gpt2", width=32, layers=4),
                                       layers_per_connection=2)
    assert calm._no_split_modules == {"LlamaDecoderLayer", "GPT2Block"}
    plugin = FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy="TRANSFORMER_BASED_WRAP")
    policy = fsdp2_prepare_auto_wrap_policy(plugin, calm)
    units = [name for name, module in calm.named_modules() if policy(module)]
    assert units == [f"anchor.model.layers.{i}" for i in range(4)] + [f"augmenting.0.h.{i}" for i in range(4)]
    assert all(not p.requires_grad for name in units for p in calm.get_submodule(name).parameters())


def test_the_sharded_runtime_reaches_trainer_and_agrees_with_its_launch_files(monkeypatch):
    import yaml

    from pipeline.launch import command
    from pipeline.training.trainer import trainer_arguments

    runtime = compose_params(["preset=micro", "runtime=fsdp"])["runtime"]
    tcfg = {"steps": 4, "batch_size": 8, "lr": 1e-3}
    two = trainer_arguments(tcfg, runtime, seed=0, output_dir="x", run_name="x", report_to="none", processes=2,
                            sharded=True)
    assert two["fsdp"] is True and two["fsdp_config"] == runtime["fsdp"] and two["bf16"] is True
    assert "fsdp" not in trainer_arguments(tcfg, runtime, seed=0, output_dir="x", run_name="x", report_to="none",
                                           processes=2)  # a kind that does not shard: data parallel
    for name in ("fsdp_one_node.yaml", "fsdp_multi_node.yaml"):  # what a user launching by hand gets
        launch = yaml.safe_load((ROOT / "launch" / name).read_text())
        assert launch["distributed_type"] == "FSDP"
        assert launch["fsdp_config"] == {f"fsdp_{k}": v for k, v in runtime["fsdp"].items()}, name
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    # the launcher alone (on this CPU: device and block swapped so that the runtime checks let it through)
    cmd = command("pipeline.train", ["w/m"], {**runtime, "device": "cpu", "fsdp": None, "processes": 2})
    assert cmd[1:6] == ["launch", "--config_file", str(ROOT / "launch" / "fsdp_one_node.yaml"), "--num_processes", "2"]
    assert cmd[-3:] == ["-m", "pipeline.train", "w/m"]


@pytest.mark.slow
def test_a_sharded_runtime_where_it_cannot_shard_is_one_line_before_anything_starts(tmp_path, monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("checks the messages a machine without a GPU gives")
    for overrides, line in (
            (["runtime=fsdp"], "runtime.device is cuda but torch sees no GPU here: compose with runtime=cpu"),
            (["runtime=fsdp", "runtime.device=cpu", "runtime.precision=fp32"],
             "runtime.fsdp needs runtime.device cuda: accelerate shards only processes on GPUs (on cpu they would "
             "train data parallel, every base whole in each)")):
        dump_params(compose_params(["preset=micro", *overrides]), tmp_path / "params.yaml")
        r = _run(tmp_path, "-m", "pipeline.launch", "pipeline.train", f"{WORLD}/calm")
        assert r.returncode == 2 and r.stderr.strip() == f"error: {line}", r.stderr
        assert not (tmp_path / "models").exists()
    # an FSDP accelerate config with a runtime that does not shard: the runtime decides, in one line
    from pipeline.train import train

    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    with pytest.raises(PipelineError, match="launched with an FSDP accelerate config but the runtime has no `fsdp`"):
        train(compose_params(["preset=micro"]), f"{WORLD}/calm")


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT.parent / "shared" / "benchmarks").is_dir(), reason="needs the real benchmark copies")
def test_the_benchmark_runner_shared_by_two_processes_writes_the_one_process_files(tmp_path):
    """`python -m pipeline.benchmarks` under torchrun: 2 processes share the generation (whole batches, gathered in
    order) and the main process alone scores and writes: the predictions and the cache are byte for byte one
    process's, the metrics the same but for their timings."""
    from tests.support.tiny_models import save_tiny_checkpoint

    save_tiny_checkpoint(tmp_path / "model")
    outputs = {}
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        r = _run(tmp_path, "-m", "pipeline.benchmarks", f"model.path={tmp_path / 'model'}", "benchmark=gsm8k",
                 "limit=7", "batch_size=2", "benchmark.n_shots=1", "benchmark.max_new_tokens=6",
                 f"data_root={ROOT.parent / 'shared' / 'benchmarks'}", f"output_dir={out}", "progress=false",
                 processes=n)
        assert r.returncode == 0, r.stderr[-3000:]
        metrics = json.loads((out / "gsm8k" / "metrics.json").read_text())
        metrics.pop("seconds")
        outputs[n] = (metrics, (out / "gsm8k" / "predictions.jsonl").read_bytes(),
                      (out / "gsm8k" / "generations_cache.jsonl").read_bytes())
        assert sorted(p.name for p in (out / "gsm8k").iterdir()) == ["generations_cache.jsonl", "metrics.json",
                                                                     "predictions.jsonl"]
    assert outputs[2] == outputs[1]
    assert len(outputs[1][1].splitlines()) == 7  # 4 batches of 2: rank 0 takes 2 of them, rank 1 the other 2
    assert r.stdout.count('"benchmark": "gsm8k"') == 1  # only the main process prints the result
