"""Several processes of one stage (data parallel: `torchrun`, `accelerate launch`, or `python -m pipeline.launch`
under a runtime with `processes` > 1): who this process is, the process group, a barrier, and who may write.

One process (`python -m pipeline.train ...`) is world size 1 and everything here is a no-op, so the one-process
path is the code it was. With several, every process builds the model and reads the data; the main process
(rank 0) alone builds what is shared on disk (first; the others then read it), prints, writes models, records,
reports and W&B runs; the others wait for it at a barrier. The launcher sets WORLD_SIZE / RANK / LOCAL_RANK
(torchrun's names, which `accelerate launch` uses too)."""
from __future__ import annotations

import contextlib
import os
import sys


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def start(runtime: dict) -> None:
    """Join the launcher's process group before anything is built (gloo on the CPU, nccl on GPUs, through
    accelerate's PartialState, which TrainingArguments reuses), and silence the other processes' output: their
    errors still reach the terminal as one line naming the rank (pipeline.cli)."""
    if world_size() == 1:
        return
    from accelerate import PartialState

    PartialState(cpu=runtime.get("device", "cpu") == "cpu")
    if not is_main():
        quiet = open(os.devnull, "w")
        sys.stdout = sys.stderr = quiet
        with contextlib.suppress(ImportError):
            import datasets.utils.logging
            import transformers.utils.logging

            transformers.utils.logging.set_verbosity_error()
            datasets.utils.logging.set_verbosity_error()


def barrier() -> None:
    if world_size() > 1:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.barrier()


@contextlib.contextmanager
def main_first():
    """The main process runs the block first (building what the others then read from disk: a tokenised data
    cache); the others run it after it. A no-op in one process."""
    if not is_main():
        barrier()
    yield
    if is_main():
        barrier()


def gather_objects(obj) -> list:
    """[obj of rank 0, obj of rank 1, ...] on every process ([obj] in one)."""
    if world_size() == 1:
        return [obj]
    import torch.distributed as dist

    out = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out


def shard(n: int) -> range:
    """The contiguous slice of n items this process takes: rank r of w gets items [r*n//w, (r+1)*n//w), so that
    the shards, concatenated in rank order, are the items in their order."""
    w, r = world_size(), rank()
    return range(r * n // w, (r + 1) * n // w)


def finish() -> None:
    """Leave the process group cleanly (after the last barrier). A launcher's single process has one too
    (`accelerate launch --num_processes 1`: accelerate joins a group of one), left as cleanly."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        if world_size() > 1:
            dist.barrier()
        dist.destroy_process_group()
