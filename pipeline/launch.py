"""The launcher comes from the runtime: `python -m pipeline.launch <module> [args]` runs a stage that trains or
generates (pipeline.train, pipeline.evaluate) on the processes conf/runtime asks for.

    runtime.processes: 1      one process, `python -m <module>` (what runtime=cpu and runtime=cuda do)
    runtime.processes: N      N data-parallel processes on this node, through `accelerate launch`
    runtime.processes: gpus   one process per GPU torch sees
    runtime.accelerate_config: a file of launch/ passed as --config_file (runtime=fsdp: launch/fsdp_one_node.yaml),
                               with the runtime's process count

A runtime on cuda on a machine without a GPU stops here in one line, before any process starts or anything is built.
Started inside a launcher already (torchrun, accelerate launch, SLURM's srun running those: WORLD_SIZE is set), it
runs the stage in this process: the stage joins the launcher's process group (pipeline/distributed.py). So the
same stage code runs under `python -m`, `torchrun` and `accelerate launch`."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError

STAGES = ("pipeline.train", "pipeline.evaluate")
CHECKOUT = Path(__file__).resolve().parent.parent  # a relative runtime.accelerate_config is read from here (launch/)


def processes(runtime: dict) -> int:
    """How many processes the runtime asks for on this node (one line when it cannot have them)."""
    import torch

    from pipeline.training.trainer import check_sharding

    device, wanted = runtime.get("device", "cpu"), runtime.get("processes", 1)
    if device == "cuda" and not torch.cuda.is_available():
        raise PipelineError("runtime.device is cuda but torch sees no GPU here: compose with runtime=cpu")
    check_sharding(runtime)
    if wanted == "gpus":
        if device != "cuda":
            raise PipelineError("runtime.processes: gpus needs runtime.device cuda")
        return torch.cuda.device_count()
    if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 1:
        raise PipelineError(f"runtime.processes must be an integer >= 1 or 'gpus', not {wanted!r}")
    if device == "cuda" and wanted > torch.cuda.device_count():
        raise PipelineError(f"runtime.processes {wanted} but torch sees {torch.cuda.device_count()} GPU(s) here")
    return wanted


def command(module: str, args: list[str], runtime: dict) -> list[str]:
    """The command line that runs `module args` as the runtime asks."""
    n = processes(runtime)
    config = runtime.get("accelerate_config")
    if "WORLD_SIZE" in os.environ or (n == 1 and not config):
        return [sys.executable, "-m", module, *args]
    accelerate = shutil.which("accelerate") or os.path.join(os.path.dirname(sys.executable), "accelerate")
    if config:  # the file says the distributed type (launch/fsdp_one_node.yaml: FSDP); the runtime, the processes
        config = Path(config) if Path(config).is_absolute() else CHECKOUT / config  # any stage's wdir
        return [accelerate, "launch", "--config_file", str(config), "--num_processes", str(n),
                "--main_process_port", str(_free_port()), "-m", module, *args]
    # --multi_gpu is accelerate's data-parallel (torchrun) launcher; on the CPU its processes join a gloo group.
    # A free port, so that two stages launched side by side on one node do not meet on accelerate's default one.
    return [accelerate, "launch", "--multi_gpu", "--num_processes", str(n), "--num_machines", "1",
            "--main_process_port", str(_free_port()), "--mixed_precision", "no", "--dynamo_backend", "no",
            "-m", module, *args]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@cli
def main(argv: list[str]) -> None:
    from pipeline.params import load_params

    if not argv or argv[0] not in STAGES:
        raise PipelineError(f"usage: python -m pipeline.launch {{{','.join(STAGES)}}} <world>/<model>")
    cmd = command(argv[0], argv[1:], load_params().get("runtime") or {})
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
