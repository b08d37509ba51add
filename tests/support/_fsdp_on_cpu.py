"""Run a training stage under runtime.fsdp on the CPU (test helper for tests/process/test_distributed.py):

    torchrun --nproc_per_node 2 tests/support/_fsdp_on_cpu.py [<kill point> <step>] <world>/<model>

accelerate turns FSDP on only for processes on GPUs (its AcceleratorState switches distributed_type to FSDP for
MULTI_GPU and the like, never for MULTI_CPU), and the pipeline refuses runtime.fsdp on the CPU for that reason
(trainer.FSDP_DEVICES). torch's FSDP2 itself shards on the CPU with gloo, so this helper lifts those two gates,
and nothing else, to run the rest of the sharded path here: accelerate's fully_shard wrapping, Trainer's sharded
checkpoints and their resume, the stage's gathering and saving. With a kill point it runs tests/support/_kill_at.py.
For a stage that `python -m pipeline.launch` starts through `accelerate launch`, a sitecustomize calls
lift_gates() in every process instead (tests/process/test_distributed.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pipeline  # noqa: E402,F401  (first: it pins the float path before torch loads)


def lift_gates() -> None:
    from accelerate import state
    from accelerate.utils import DistributedType

    from pipeline.training import trainer

    trainer.FSDP_DEVICES = (*trainer.FSDP_DEVICES, "cpu")
    init = state.AcceleratorState.__init__

    def __init__(self, *args, fsdp_plugin=None, **kwargs):
        init(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            # what state.py does for MULTI_GPU (mixed precision aside: fp32 on the CPU)
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = fsdp_plugin
            state.PartialState._shared_state["distributed_type"] = self.distributed_type

    state.AcceleratorState.__init__ = __init__


if __name__ == "__main__":
    lift_gates()
    if len(sys.argv) == 4:
        import _kill_at

        _kill_at.main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
    else:
        from pipeline.train import main

        main(sys.argv[1:])
