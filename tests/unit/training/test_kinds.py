"""Training kinds (pipeline/training/kinds.py) in-process on the toy copy world: untrained models are the
seeded architecture, inits load from sibling, directory or hub with one clear line when absent, and the
runtime's device/precision reach TrainingArguments."""
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.support.toy_worlds import conf_with_world

from pipeline.errors import PipelineError, UserError
from pipeline.params import compose_params

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def conf_dir(tmp_path_factory):
    return conf_with_world(tmp_path_factory, "toy_copy_world.yaml", "copy")


@pytest.fixture()
def world(conf_dir, tmp_path, monkeypatch):
    """A workdir with the copy world's data and tokenizer; returns a function composing its params."""
    from pipeline.build_data import build_world_data
    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import world_tokenizer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("CALM_THREADS", "1")

    def params(*overrides):
        return compose_params(["preset=micro", "world=[copy]", *overrides], conf_dir=conf_dir)

    p = params()
    build_world_data(p, "copy")
    world_tokenizer(p, "copy").save_pretrained(str(tokenizer_dir("copy")))
    return params


def _weights(name):
    return load_file(f"models/copy/{name}/model.safetensors")


def test_steps_0_gives_the_untrained_seeded_architecture(world):
    from transformers import set_seed

    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import load_tokenizer
    from pipeline.train import train
    from pipeline.training.architectures import build_base_model

    p = world()
    assert train(p, "copy/mA_random")["steps"] == 0
    set_seed(p["seed"])
    fresh = build_base_model(p["worlds"]["copy"]["models"]["mA_random"]["arch"], load_tokenizer(tokenizer_dir("copy")),
                             p["worlds"]["copy"]["max_positions"]).state_dict()
    saved = _weights("mA_random")
    assert saved and all(torch.equal(saved[k], fresh[k]) for k in saved)
    assert json.loads(Path("models/copy/mA_random/train_info.json").read_text())["untrained"] is True
    # another seed, another model: the seed is what makes it reproducible
    p1 = world("seed=1")
    shutil.rmtree("models/copy/mA_random")
    train(p1, "copy/mA_random")
    assert not all(torch.equal(_weights("mA_random")[k], saved[k]) for k in saved)


def test_init_from_a_sibling_and_from_a_local_directory(world, tmp_path):
    from pipeline.train import train

    p = world()
    train(p, "copy/mA_random")
    # a base model started from a local directory (steps 0: exactly that model)
    p = world("+worlds.copy.models.from_dir={kind: base, init: " + str(tmp_path / "models/copy/mA_random") + ", train: {steps: 0}}")
    train(p, "copy/from_dir")
    a, b = _weights("mA_random"), _weights("from_dir")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # a sibling: full fine-tune of mA_random for 2 steps changes every trained weight but keeps the shapes
    p = world("worlds.copy.models.mB_ft.init=mA_random", "worlds.copy.models.mB_ft.train.steps=2")
    train(p, "copy/mB_ft")
    c = _weights("mB_ft")
    assert c.keys() == a.keys() and not torch.equal(c["model.embed_tokens.weight"], a["model.embed_tokens.weight"])


def test_the_one_loader_reads_a_trained_directory_by_its_kind_and_a_checkpoint_as_such(world):
    """load_model on a model a stage wrote: its kind loads it (pipeline_kind beside it), with the world's tokenizer
    as the evaluation stage reads it (its vocabulary map); the same directory as a plain checkpoint (trained=False,
    load_causal_lm) gives the same weights; a trained model not yet written is one line naming its stage."""
    from pipeline.layout import model_dir, tokenizer_dir
    from pipeline.train import train
    from pipeline.training.kinds import load_model, load_trained_model

    train(world(), "copy/mA_random")
    saved = _weights("mA_random")
    model, tokenizer = load_model(model_dir("copy", "mA_random"), tokenizer=tokenizer_dir("copy"))
    assert hasattr(tokenizer, "vocabulary_map") and not hasattr(model, "calm_source")  # Kind.load, not load_causal_lm
    plain, same = load_model(model_dir("copy", "mA_random"), tokenizer=tokenizer, trained=False)
    assert same is tokenizer and plain.calm_source["name_or_path"] == str(model_dir("copy", "mA_random"))
    for loaded in (model, plain, load_trained_model(model_dir("copy", "mA_random"))):
        weights = loaded.state_dict()
        assert all(torch.equal(weights[k], saved[k]) for k in saved)
    with pytest.raises(PipelineError, match=r"^missing upstream model models/copy/nope: run its stage first"):
        load_model(model_dir("copy", "nope"), tokenizer=tokenizer, trained=True)


def test_missing_init_model_fails_in_one_line_naming_both_places(world, monkeypatch):
    from pipeline.train import train

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    p = world("+worlds.copy.models.gone={kind: finetune, init: nobody/no-such-model, data: [train], train: {steps: 1}}")
    with pytest.raises(UserError) as e:
        train(p, "copy/gone")
    message = str(e.value)
    assert "\n" not in message and "not a local directory" in message and "hub" in message and "nobody/no-such-model" in message


@pytest.mark.parametrize("override,match", [
    ("worlds.copy.models.mB_ft.init=random", "needs `init`"),
    ("worlds.copy.models.mB_lora.lora.r=0", "lora.r must be a positive integer"),
    ("worlds.copy.models.mA.train.steps=-1", "train.steps must be an integer >= 0"),
])
def test_bad_kind_settings_fail_in_one_line(world, override, match):
    from pipeline.train import train

    p = world(override)
    key = "copy/" + override.split(".")[3]
    if "init=random" in override or "lora" in override:
        train(p, "copy/mB")
    with pytest.raises(PipelineError, match=match):
        train(p, key)


def test_gpu_runtime_settings_reach_training_arguments(conf_dir):
    from pipeline.training.trainer import check_runtime, trainer_arguments

    p = compose_params(["preset=micro", "runtime=cuda"], conf_dir=conf_dir)
    tcfg = p["worlds"]["kv_arithmetic"]["models"]["mB"]["train"]
    kwargs = trainer_arguments(tcfg, p["runtime"], seed=0, output_dir="x", run_name="x", report_to="none")
    assert kwargs["use_cpu"] is False and kwargs["bf16"] is True and kwargs["fp16"] is False
    assert kwargs["dataloader_num_workers"] == p["runtime"]["dataloader_workers"] == 2
    cpu = trainer_arguments(tcfg, compose_params(["preset=micro"], conf_dir=conf_dir)["runtime"], seed=0,
                            output_dir="x", run_name="x", report_to="none")
    assert cpu["use_cpu"] is True and cpu["bf16"] is False
    assert compose_params(["preset=micro", "runtime=multi_gpu"], conf_dir=conf_dir)["runtime"]["launch"] == "python -m pipeline.launch"
    with pytest.raises(PipelineError, match="needs runtime.device cuda"):
        check_runtime({"device": "cpu", "precision": "bf16"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message a machine without a GPU gives")
def test_cuda_runtime_without_a_gpu_is_one_line(world):
    from pipeline.train import train

    with pytest.raises(PipelineError, match="torch sees no GPU"):
        train(world("runtime=cuda"), "copy/mA")


def _varied_rows(n: int, seed: int = 0):
    """Rows of 6-60 tokens whose answers (labels) are of different lengths, as a datasets.Dataset."""
    import random

    from datasets import Dataset

    rng = random.Random(seed)
    rows = {"input_ids": [], "labels": []}
    for _ in range(n):
        length, prompt = rng.randint(6, 60), rng.randint(2, 5)
        ids = [1] + [rng.randint(3, 95) for _ in range(length - 1)]
        rows["input_ids"].append(ids)
        rows["labels"].append([-100] * prompt + ids[prompt:])
    return Dataset.from_dict(rows)


@pytest.mark.parametrize("model_kind", ["base", "composition"])
def test_micro_batches_give_the_whole_batch_update(model_kind, tmp_path, monkeypatch):
    """An optimizer batch cut into length-sorted micro-batches with gradient accumulation trains the same weights
    (to float summation order) and logs the same loss as the whole batch: each micro-batch's loss is normalised
    by the whole batch's answer tokens. The rows differ in length and answer length, so a per-micro-batch mean
    would weight them differently; the loss would show a missing 1/k."""
    from pipeline.composition import CALMForCausalLM
    from pipeline.training.data import Collator
    from pipeline.training.trainer import run_trainer
    from tests.support.tiny_models import tiny_model

    monkeypatch.setenv("WANDB_MODE", "disabled")
    dataset = _varied_rows(16)
    tcfg = {"steps": 3, "batch_size": 16, "lr": 1e-2, "warmup_ratio": 0.0, "logging_steps": 1, "save_steps": 100}

    def trained(micro_batches):
        if model_kind == "base":
            model = tiny_model("llama", width=32, layers=2, heads=2, seed=0)
        else:
            model = CALMForCausalLM.from_models(tiny_model("llama", width=32, layers=2, heads=2, seed=0),
                                                tiny_model("gpt2", width=24, layers=2, heads=2, seed=1),
                                                connections=[(0, 0), (1, 1)])
        start = {k: v.detach().clone() for k, v in model.state_dict().items()}
        padded_lengths = []
        model.register_forward_pre_hook(lambda m, a, kw: padded_lengths.append(kw["input_ids"].shape[1]),
                                        with_kwargs=True)
        trainer, info = run_trainer(model, dataset, Collator(0), tcfg, {"threads": 1}, 0,
                                    tmp_path / f"run{micro_batches}", "t", {}, {}, micro_batches=micro_batches)
        update = torch.cat([(v.detach() - start[k]).flatten() for k, v in trainer.model.state_dict().items()])
        return update, info, padded_lengths

    whole, whole_info, whole_lengths = trained(1)
    micro, micro_info, micro_lengths = trained(4)
    assert len(whole_lengths) == 3 and len(micro_lengths) == 12   # 3 steps, 4 micro-batches each
    assert sum(micro_lengths) < sum(whole_lengths) * 4 * 0.9       # each micro-batch padded to its own longest row
    assert micro_info["steps"] == whole_info["steps"] == 3
    assert micro_info["train_loss"] == pytest.approx(whole_info["train_loss"], rel=1e-5)
    # Adam divides by sqrt(v): on a weight whose gradient is ~0 float noise can flip a step's sign, so the test
    # bounds the whole update's relative error (a per-micro-batch mean gives 0.58 here; summation order ~1e-5)
    assert whole.norm() > 0
    assert ((micro - whole).norm() / whole.norm()).item() < 1e-3

def test_micro_batches_must_divide_the_batch():
    from pipeline.training.trainer import trainer_arguments

    tcfg = {"steps": 1, "batch_size": 32, "lr": 1e-3}
    args = trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none", micro_batches=4)
    assert args["per_device_train_batch_size"] == 8 and args["gradient_accumulation_steps"] == 4
    assert args["train_sampling_strategy"] == "batch_rebalance"
    for bad in (3, 0, "4", True):
        with pytest.raises(PipelineError, match="micro_batches"):
            trainer_arguments(tcfg, {}, seed=0, output_dir="x", run_name="x", report_to="none", micro_batches=bad)
