"""One Trainer path for every kind: TrainingArguments from a recipe (conf/training) and the runtime
(conf/runtime: device, precision, threads), resumable from the newest *complete* checkpoint."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.tracking import wandb_enabled

DEVICES = ("cpu", "cuda")
PRECISIONS = ("fp32", "bf16", "fp16")


def check_runtime(runtime: dict) -> None:
    device, precision = runtime.get("device", "cpu"), runtime.get("precision", "fp32")
    if device not in DEVICES:
        raise PipelineError(f"runtime.device must be one of {', '.join(DEVICES)}, not {device!r}")
    if precision not in PRECISIONS:
        raise PipelineError(f"runtime.precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if device == "cpu" and precision != "fp32":
        raise PipelineError(f"runtime.precision {precision} needs runtime.device cuda (this runtime trains on the CPU in fp32)")
    check_sharding(runtime)


# accelerate (1.15, state.py's AcceleratorState) turns FSDP on only for processes on GPUs (and other accelerators);
# processes on the CPU (MULTI_CPU) would silently train data parallel, every base whole in every process. torch's
# FSDP2 itself runs on the CPU with gloo: tests/support/_fsdp_on_cpu.py lifts accelerate's gate to prove this path
# there.
FSDP_DEVICES = ("cuda",)


def check_sharding(runtime: dict) -> None:
    """One line when runtime.fsdp (Trainer's fsdp_config) cannot shard on the runtime's device."""
    fsdp = runtime.get("fsdp")
    if fsdp is None:
        return
    if not isinstance(fsdp, dict) or fsdp.get("version", 2) != 2:
        raise PipelineError(f"runtime.fsdp must be Trainer's fsdp_config for FSDP2 (a mapping, version 2), not {fsdp!r}")
    if runtime.get("device", "cpu") not in FSDP_DEVICES:
        raise PipelineError(f"runtime.fsdp needs runtime.device cuda: accelerate shards only processes on GPUs (on "
                            f"{runtime.get('device', 'cpu')} they would train data parallel, every base whole in each)")


def require_device(runtime: dict) -> None:
    """Fail in one line when the runtime asks for a GPU this machine does not have."""
    import torch

    if runtime.get("device", "cpu") == "cuda" and not torch.cuda.is_available():
        raise PipelineError("runtime.device is cuda but torch sees no GPU here: compose with runtime=cpu")
    check_sharding(runtime)


def set_threads(runtime: dict) -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("CALM_THREADS", runtime.get("threads", 2))))


def check_micro_batches(micro_batches, batch_size: int) -> int:
    """The number of micro-batches an optimizer batch is cut into (1 = none), or one line on why it can't be."""
    if isinstance(micro_batches, bool) or not isinstance(micro_batches, int) or micro_batches < 1:
        raise PipelineError(f"micro_batches must be an integer >= 1 (1 = whole batches), not {micro_batches!r}")
    if batch_size % micro_batches:
        raise PipelineError(f"micro_batches {micro_batches} does not divide train.batch_size {batch_size}: "
                            "every optimizer step must see batch_size rows")
    return micro_batches


def check_processes(processes: int, batch_size: int, micro_batches: int) -> None:
    """One line when the recipe's batch cannot be shared by this many processes x micro-batches."""
    if batch_size % (processes * micro_batches):
        raise PipelineError(
            f"train.batch_size {batch_size} cannot be shared by {processes} processes x {micro_batches} micro-batches: "
            "the global batch is batch_size rows on any number of processes, so batch_size must be a multiple of "
            "processes x micro_batches")


def trainer_arguments(tcfg: dict, runtime: dict, *, seed: int, output_dir: str, run_name: str, report_to,
                      micro_batches: int = 1, processes: int = 1, sharded: bool = False) -> dict:
    """The TrainingArguments keywords for a recipe on a runtime (a plain dict, so tests can read it).

    micro_batches > 1 cuts each optimizer batch of `batch_size` random rows into that many micro-batches of rows
    of like length (transformers' "batch_rebalance" sampler: shuffle, take batch_size rows, sort, partition by
    padded cost) with gradient accumulation; Trainer normalises each micro-batch's loss by the answer tokens of
    the whole batch (num_items_in_batch), so the update is the whole batch's up to float summation order, while
    padding to each micro-batch's own longest row cuts the padded positions a model computes (up to ~1.8x fewer
    on the code world's rows, whose lengths run 20-330 characters).

    processes > 1 (data parallel, pipeline.distributed) keeps the recipe's meaning: an optimizer step still sees
    `batch_size` rows, the same rows as one process (the data order is the seed's, not the process count's).
    Without micro-batches, accelerate's split_batches: the dataloader yields the one-process batch (batch_size
    rows, accelerate's seeded sampler with data_seed, as in one process) and each process takes its contiguous
    share (SeededRebalanceTrainer splits an epoch's last, short batch evenly too). With micro-batches, the
    batch_rebalance sampler already partitions each batch of batch_size rows over processes x micro-batches.
    Trainer sums each process's answer tokens across processes (average_tokens_across_devices) and DDP averages
    the gradients, so the update is one process's up to float summation order. At processes == 1 the arguments
    are exactly the one-process ones.

    sharded (runtime.fsdp, several processes, a kind that shards: a composition) adds Trainer's FSDP2 settings:
    accelerate wraps each class of the model's _no_split_modules (the bases' decoder layers) as its own unit and
    the rest as the root unit; Trainer's optimizer takes the parameters that require grad only (the
    composition's), and its checkpoints are sharded (state_dict_type)."""
    check_runtime(runtime)
    steps = int(tcfg["steps"])
    k = check_micro_batches(micro_batches, int(tcfg["batch_size"]))
    grouping = {} if k == 1 else dict(gradient_accumulation_steps=k, train_sampling_strategy="batch_rebalance")
    per_device = int(tcfg["batch_size"]) // k
    if processes > 1:
        check_processes(processes, int(tcfg["batch_size"]), k)
        if k == 1:  # the dataloader's batch is the global one; accelerate gives each process its share
            grouping = dict(accelerator_config={"split_batches": True})
        else:  # the sampler takes batch_size rows per step and deals them to processes x micro-batches
            per_device = int(tcfg["batch_size"]) // (k * processes)
        if sharded:
            grouping.update(fsdp=True, fsdp_config=dict(runtime["fsdp"]))
    return dict(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=per_device,
        **grouping,
        learning_rate=tcfg["lr"],
        weight_decay=tcfg.get("weight_decay", 0.0),
        warmup_steps=int(tcfg.get("warmup_ratio", 0.05) * steps),
        lr_scheduler_type=tcfg.get("scheduler", "cosine"),
        adam_beta2=tcfg.get("adam_beta2", 0.99),
        max_grad_norm=tcfg.get("max_grad_norm", 1.0),
        logging_steps=tcfg.get("logging_steps", 50),
        save_strategy="steps",
        save_steps=tcfg.get("save_steps", 250),
        save_total_limit=2,
        seed=seed,
        data_seed=seed,
        report_to=report_to,
        run_name=run_name,
        use_cpu=runtime.get("device", "cpu") == "cpu",
        bf16=runtime.get("precision") == "bf16",
        fp16=runtime.get("precision") == "fp16",
        dataloader_num_workers=int(runtime.get("dataloader_workers", 0)),
        remove_unused_columns=False,
        disable_tqdm=False,
    )


FSDP_MODEL_DIR, FSDP_OPTIMIZER_DIR = "pytorch_model_fsdp_", "optimizer_"  # accelerate's save_fsdp_model/_optimizer


def _incomplete(checkpoint: Path) -> str | None:
    """Why a checkpoint cannot be resumed from (None when it can): Trainer writes its weights, optimizer.pt,
    scheduler.pt and rng_state*.pth, then trainer_state.json last; each must be there and whole (pipeline.io's
    damaged_file: safetensors headers and lengths, torch files' zip directories), and the state must name the
    checkpoint's step."""
    from pipeline.io import WEIGHT_SUFFIXES, damaged_file

    try:
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        if int(state["global_step"]) != int(checkpoint.name.split("-")[1]):
            return f"trainer_state.json names step {state['global_step']}"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"trainer_state.json is {'missing' if isinstance(e, FileNotFoundError) else 'unreadable'}"
    files = {p.name: p for p in checkpoint.iterdir() if p.is_file()}
    weights = [n for n in files if n.endswith(".safetensors") or (n.endswith(".bin") and n != "training_args.bin")]
    # an FSDP checkpoint (SHARDED_STATE_DICT): torch.distributed.checkpoint directories of every process's shards,
    # each whole once its .metadata is there (the coordinator writes it last, after every process's part)
    parts = sorted(p.name for p in checkpoint.iterdir()
                   if p.is_dir() and p.name.startswith((FSDP_MODEL_DIR, FSDP_OPTIMIZER_DIR)))
    weights += [n for n in parts if n.startswith(FSDP_MODEL_DIR)]
    optimizer = [] if any(n.startswith(FSDP_OPTIMIZER_DIR) for n in parts) else ["optimizer.pt"]
    missing = [f"{n}/.metadata" for n in parts if not (checkpoint / n / ".metadata").is_file()]
    missing += [n for n in (*optimizer, "scheduler.pt") if n not in files]
    ranks = int(((state.get("stateful_callbacks") or {}).get(LOSS_SUMS) or {}).get("processes", 1))
    if ranks > 1:  # Trainer writes one RNG state per process
        missing += [f"rng_state_{r}.pth" for r in range(ranks) if f"rng_state_{r}.pth" not in files]
    else:
        missing += [] if any(n.startswith("rng_state") for n in files) else ["rng_state.pth"]
    missing += [] if weights else ["the model's weights"]
    if missing:
        return f"{', '.join(missing)} missing"
    for name in sorted(files):
        why = damaged_file(files[name]) if name.endswith(WEIGHT_SUFFIXES) else None
        if why:
            return f"{name} is {why}"
    return None


def last_complete_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint-N in run_dir; incomplete or damaged ones (a kill while Trainer wrote them, a
    truncated file) are removed with one line each, so neither the resume nor Trainer's checkpoint rotation ever
    reads them."""
    if not run_dir.is_dir():
        return None
    checkpoints = sorted(
        (p for p in run_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[1].isdigit()),
        key=lambda p: int(p.name.split("-")[1]), reverse=True,
    )
    for checkpoint in checkpoints:
        why = _incomplete(checkpoint)
        if why is None:
            return checkpoint
        print(f"removing incomplete {checkpoint}: {why}", file=sys.stderr)
        shutil.rmtree(checkpoint, ignore_errors=True)
    return None


def _progress_callback():
    from transformers.trainer_callback import ProgressCallback

    class LossProgress(ProgressCallback):
        """tqdm bar with ETA and the latest loss / learning rate in its postfix."""

        def on_log(self, args, state, control, logs=None, **kw):
            if state.is_world_process_zero and self.training_bar is not None and logs:
                post = {k: f"{v:.4g}" for k, v in logs.items() if k in ("loss", "learning_rate", "grad_norm")}
                if post:
                    self.training_bar.set_postfix(post, refresh=False)
                    return
            return super().on_log(args, state, control, logs=logs, **kw)

    return ProgressCallback, LossProgress


LOSS_SUMS = "calm_loss_sums"  # trainer_state.json's stateful_callbacks entry that carries them (see below)


def _trainer_class():
    from accelerate.data_loader import BatchSamplerShard
    from transformers import Trainer, TrainerCallback
    from transformers.trainer_pt_utils import BatchRebalanceSampler

    class EvenSplitShard(BatchSamplerShard):
        """accelerate's split_batches shard, but an epoch's last, short batch of r rows is split into the
        processes' contiguous shares too (accelerate tops it up to a full batch with rows from the epoch's start,
        so several processes would train on other rows than one process does). Losses are normalised by the
        answer tokens summed over processes, so uneven shares give one process's update. Fewer rows than
        processes: topped up as accelerate does (every process needs a row)."""

        def _iter_with_split(self):
            n, p = self.num_processes, self.process_index
            first = None
            for batch in self.batch_sampler:
                first = batch if first is None else first
                if len(batch) < n:
                    batch = (batch + first * n)[:n]
                yield batch[p * len(batch) // n:(p + 1) * len(batch) // n]

    class RestoreLossSums(TrainerCallback):
        """On a resume, put back the running loss sums the checkpoint saved (Trainer starts them at zero), and
        log the whole run's train_loss at the end (Trainer's divides the sum by the resumed steps only)."""

        def __init__(self, trainer):
            self.trainer = trainer

        def on_train_begin(self, args, state, control, **kwargs):
            sums = state.stateful_callbacks.get(LOSS_SUMS) if state.global_step else None
            if sums:
                self.trainer._total_loss_scalar = sums["total_loss_scalar"]
                # each process's own running sum (their mean is what Trainer logs)
                self.trainer._tr_loss.fill_(sums.get("tr_loss_per_process", [sums["tr_loss"]])[args.process_index])
                self.trainer._globalstep_last_logged = sums["globalstep_last_logged"]
                self.trainer.loss_sums_restored = True

        def on_log(self, args, state, control, logs=None, **kwargs):
            # the end-of-training log (printed, sent to W&B by the callbacks after this one): the whole run's mean
            if logs and "train_loss" in logs and getattr(self.trainer, "loss_sums_restored", False):
                logs["train_loss"] = self.trainer._total_loss_scalar / state.global_step

    class SeededRebalanceTrainer(Trainer):
        """Trainer whose batch_rebalance sampler shuffles with the run's data seed (transformers builds it with
        a fixed seed 42, which would give every composition seed the same row order), and whose checkpoints
        carry the running loss sums Trainer otherwise keeps in memory only (the loss of the steps since the last
        log, the sum of the logged ones, the step last logged): a resumed run then logs the same losses and
        ends with the same train_loss as an uninterrupted one (Trainer's own resume averages the resumed steps
        only)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.callback_handler.callbacks.insert(0, RestoreLossSums(self))  # before the loggers (on_log)

        def get_train_dataloader(self):
            loader = super().get_train_dataloader()
            shard = getattr(loader, "batch_sampler", None)
            if isinstance(shard, BatchSamplerShard) and shard.split_batches and shard.num_processes > 1:
                shard.__class__ = EvenSplitShard  # an epoch's short last batch: shared, not topped up
            return loader

        def _get_train_sampler(self, train_dataset=None):
            sampler = super()._get_train_sampler(train_dataset)
            if isinstance(sampler, BatchRebalanceSampler):
                sampler.seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
            return sampler

        def _save_checkpoint(self, model, trial):
            self.state.stateful_callbacks[LOSS_SUMS] = {  # tr_loss is float32: its .item() round-trips exactly
                "total_loss_scalar": self._total_loss_scalar, "tr_loss": self._tr_loss.item(),
                "globalstep_last_logged": self._globalstep_last_logged}
            if self.args.world_size > 1:  # every process's running sum, and how many wrote RNG states
                sums = self.accelerator.gather(self._tr_loss.detach().reshape(1).to(self.args.device))
                self.state.stateful_callbacks[LOSS_SUMS].update(
                    tr_loss_per_process=[float(x) for x in sums.cpu()], processes=self.args.world_size)
            super()._save_checkpoint(model, trial)

    return SeededRebalanceTrainer


def gathered_state_dict(trainer) -> dict | None:
    """Under FSDP the model's trainable parameters whole, on the main process, for saving (a collective: every
    process calls it, the others get {}): torch.distributed.checkpoint's full state dict without the frozen
    parameters, so a composition's bases are never gathered. None when the model's own tensors are whole."""
    if not getattr(trainer, "is_fsdp_enabled", False):
        return None
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(trainer.model, options=StateDictOptions(
        full_state_dict=True, cpu_offload=True, ignore_frozen_params=True))


def run_trainer(model, dataset, collator, tcfg: dict, runtime: dict, seed: int, run_dir: Path, run_name: str,
                wandb_cfg: dict, extra_config: dict, micro_batches: int = 1, sharded: bool = False):
    """Train (resuming from run_dir's newest complete checkpoint) -> (trainer, info)."""
    from transformers import TrainingArguments

    from pipeline import distributed

    use_wandb = wandb_enabled() and distributed.is_main()  # one W&B run, the main process's
    if use_wandb:
        os.environ.setdefault("WANDB_PROJECT", wandb_cfg.get("project", "calm-repro"))
    set_threads(runtime)
    args = TrainingArguments(**trainer_arguments(
        tcfg, runtime, seed=seed, output_dir=str(run_dir), run_name=run_name,
        report_to=["wandb"] if use_wandb else "none", micro_batches=micro_batches,
        processes=distributed.world_size(), sharded=sharded))
    trainer = _trainer_class()(model=model, args=args, train_dataset=dataset, data_collator=collator)
    Base, Mine = _progress_callback()
    trainer.remove_callback(Base)
    trainer.add_callback(Mine)
    if use_wandb:
        import wandb

        if wandb.run is None:
            wandb.init(project=os.environ["WANDB_PROJECT"], name=run_name, group=wandb_cfg.get("group"),
                       config=extra_config, reinit="finish_previous")
        else:
            wandb.config.update(extra_config, allow_val_change=True)
    if distributed.is_main():  # removes incomplete checkpoints: the main process alone, the others then look
        last = last_complete_checkpoint(run_dir)
    distributed.barrier()
    if not distributed.is_main():
        last = last_complete_checkpoint(run_dir)
    if last:
        print(f"resuming from {last}", file=sys.stderr)
    t0 = time.time()
    if last and int(last.name.split("-")[1]) >= args.max_steps:
        # killed after its last checkpoint: Trainer.train would "resume" into one step past max_steps
        from transformers.trainer_callback import TrainerState

        trainer._load_from_checkpoint(str(last))
        trainer.state = TrainerState.load_from_json(str(last / "trainer_state.json"))
        sums = trainer.state.stateful_callbacks.get(LOSS_SUMS)
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        if sums:  # what the uninterrupted run's train() adds up once its last step is saved
            training_loss = (sums["total_loss_scalar"] + sums["tr_loss"]) / trainer.state.global_step
        else:  # a checkpoint written before the sums were saved
            training_loss = sum(losses) / len(losses) if losses else None
    else:
        training_loss = trainer.train(resume_from_checkpoint=str(last) if last else None).training_loss
        if last and getattr(trainer, "loss_sums_restored", False):  # Trainer divided by the resumed steps only
            training_loss = trainer._total_loss_scalar / trainer.state.global_step
    history = [h for h in trainer.state.log_history if "loss" in h]
    if use_wandb:
        import wandb

        wandb.finish()
    return trainer, {
        "train_loss": training_loss,
        "final_logged_loss": history[-1]["loss"] if history else None,
        "steps": trainer.state.global_step,
        "seconds_this_run": round(time.time() - t0, 1),
        "resumed_from": str(last) if last else None,
        "loss_history": [(h["step"], h["loss"]) for h in history],
    }
