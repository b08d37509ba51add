"""Stage train@<world>/<model>: `python -m pipeline.train <world>/<model>` -> models/<world>/<model>/.

Whatever the model's kind (pipeline/training/kinds.py: base, finetune, lora, composition), the stage builds its
starting model and data, trains it with transformers.Trainer on the runtime conf/ selects (device, precision,
threads), and writes models/<world>/<model>/ atomically with `pipeline_kind` and `train_info.json` beside the
weights. `train.steps: 0` saves the starting model untrained.

Resumable: Trainer checkpoints go to models/.checkpoints/<world>-<model>-<fingerprint>/ (the fingerprint covers
the model's conf, its seed, its data, its upstream models and the precision, so a stale checkpoint is never
resumed); a rerun after a kill resumes from the newest complete one (optimizer, scheduler, RNG, data order and
running loss sums restored) and ends with the same weights and train_info as an uninterrupted run (but for
seconds_this_run and resumed_from). A checkpoint whose files do not verify (a kill mid-write, a truncated file) is
removed with one line and the one before it resumed.

Under several processes (torchrun, accelerate launch; pipeline/distributed.py) the stage trains data parallel with
the recipe's global batch (trainer.trainer_arguments); the main process alone tokenises the data cache first,
prints, writes the model directory, train_info.json and the run log, and removes the checkpoints; the others wait.
Under runtime.fsdp a composition trains sharded (FSDP2): its checkpoints are every process's shards, and the
composition's parameters are gathered whole for the main process to save, the very files one process saves.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pipeline import distributed, float_path
from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_dir, atomic_write_json, fingerprint
from pipeline.layout import CHECKPOINTS, model_dir, run_log_path
from pipeline.params import load_params, model_spec
from pipeline.stages import execution_settings
from pipeline.training.lineage import upstream_models

RUN_LOG_FIELDS = ("seconds_this_run", "resumed_from")


def train(params: dict, key: str) -> dict:
    from pipeline.tokenization import save_tokenizer
    from pipeline.training.kinds import KIND_FILE, Stage, get_kind
    from pipeline.training.trainer import (check_processes, gathered_state_dict, require_device, run_trainer,
                                           set_threads)

    world, name, cfg = model_spec(params, key)
    kind = get_kind(cfg.get("kind"))
    stage = Stage(params, world, name, cfg)
    steps = (cfg.get("train") or {}).get("steps")
    if not isinstance(steps, int) or steps < 0:
        raise PipelineError(f"model {key}: train.steps must be an integer >= 0 (0 = save it untrained), not {steps!r}")
    require_device(stage.runtime)
    if steps and distributed.world_size() > 1:  # a batch the processes cannot share: one line before anything is built
        check_processes(distributed.world_size(), int(cfg["train"]["batch_size"]),
                        execution_settings(params, world).get("micro_batches", 1))
    distributed.start(stage.runtime)
    set_threads(stage.runtime)
    # runtime.fsdp shards a composition's frozen bases over the processes (trainer.trainer_arguments); the runtime
    # decides, not the launcher: accelerate would also shard any model from an FSDP config file's environment
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true" and not stage.runtime.get("fsdp"):
        raise PipelineError("launched with an FSDP accelerate config but the runtime has no `fsdp` block: compose "
                            "with runtime=fsdp (or launch with launch/one_node.yaml)")
    sharded = bool(stage.runtime.get("fsdp")) and distributed.world_size() > 1 and bool(steps)
    if sharded and not kind.shardable:
        print(f"{key}: kind {kind.name} trains data parallel under runtime.fsdp (sharding is for compositions)",
              file=sys.stderr)
        sharded = False
    if not sharded:
        os.environ.pop("ACCELERATE_USE_FSDP", None)
    tokenizer = stage.tokenizer()
    models = params["worlds"][world]["models"]
    related = {u: models[u] for u in upstream_models(world, name, cfg, models)}
    execution = execution_settings(params, world)
    fp = fingerprint({"key": key, "cfg": cfg, "seed": stage.seed, "related": related,
                      "precision": stage.runtime.get("precision", "fp32"), **execution,
                      # a checkpoint made on another float path is never resumed (its steps summed in another order)
                      "float_path": float_path.pin(),
                      # a checkpoint of another process count is never resumed (its RNG and loss sums are per process)
                      **({"processes": distributed.world_size()} if distributed.world_size() > 1 else {}),
                      # a sharded checkpoint (torch.distributed.checkpoint directories) is resumed sharded only
                      **({"fsdp": stage.runtime["fsdp"]} if sharded else {})},
                     kind.inputs(stage))
    model, counts = kind.build(stage, tokenizer)
    print(f"{key}: kind {kind.name}, " + ", ".join(f"{k}={v}" for k, v in counts.items()), file=sys.stderr)
    run_dir = CHECKPOINTS / f"{world}-{name}-{fp}"
    state_dict = None  # the model's own weights, unless sharded
    if steps == 0:
        info = {"steps": 0, "untrained": True}
    else:
        with distributed.main_first():  # the main process writes the tokenised cache, the others read it
            dataset, collator, data_counts = kind.dataset(stage, tokenizer)
        counts.update(data_counts)
        trainer, info = run_trainer(
            model, dataset, collator, cfg["train"], stage.runtime, stage.seed, run_dir, key, params.get("wandb", {}),
            {"pipeline": {"kind": kind.name, "world": world, "name": name, **cfg}, "seed": stage.seed, **counts},
            micro_batches=execution.get("micro_batches", 1), sharded=sharded,
        )
        info.update(execution)
        if distributed.world_size() > 1:
            info["processes"] = distributed.world_size()
        if sharded:
            info["sharded"] = "fsdp2"
        model = trainer.model
        state_dict = gathered_state_dict(trainer)  # every process takes part; the main one gets the weights
    if not distributed.is_main():
        distributed.finish()  # wait for the main process to write the model
        return info
    with atomic_dir(model_dir(world, name)) as tmp:
        kind.save(model, tmp, state_dict)
        save_tokenizer(tokenizer, tmp)  # a restricted vocabulary's map too: which original ids the model's rows are
        (tmp / KIND_FILE).write_text(f"{kind.name}\n")
        recipe = {k: v for k, v in info.items() if k not in RUN_LOG_FIELDS}
        atomic_write_json(tmp / "train_info.json",
                          {"kind": kind.name, "seed": stage.seed, **counts, **recipe, **float_path.describe()})
    atomic_write_json(run_log_path(world, name), {k: info.get(k) for k in RUN_LOG_FIELDS})
    shutil.rmtree(run_dir, ignore_errors=True)
    distributed.finish()
    return info


def read_run_log(world: str, name: str, root: Path = Path(".")) -> dict:
    import json

    path = root / run_log_path(world, name)
    return json.loads(path.read_text()) if path.exists() else {}


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1 or "/" not in argv[0]:
        raise PipelineError("usage: python -m pipeline.train <world>/<model>")
    info = train(load_params(), argv[0])
    loss = info.get("train_loss")
    print(f"{argv[0]}: " + (f"train_loss={loss:.4f} " if loss is not None else "untrained ")
          + f"steps={info['steps']} ({info.get('seconds_this_run', 0)} s)")


if __name__ == "__main__":
    main()
