"""Run a training stage and SIGKILL it at a chosen instant (test helper for tests/process/test_train_resume.py).

    python tests/support/_kill_at.py <point> <step> <world>/<model>

points: step        after optimizer step <step> (between checkpoints)
        checkpoint  while checkpoint-<step> is being written: its weights are on disk, its trainer_state.json not
        state       half-way through writing checkpoint-<step>/trainer_state.json (a truncated file)
        final       while the finished model is being written into its temporary directory
"""
import os
import signal
import sys


def die():
    # under several processes (torchrun tests/support/_kill_at.py ...), CALM_KILL_RANK picks the one that dies (the
    # launcher then stops the others)
    if os.environ.get("CALM_KILL_RANK", os.environ.get("RANK", "0")) == os.environ.get("RANK", "0"):
        os.kill(os.getpid(), signal.SIGKILL)


def main(point: str, step: int, key: str) -> None:
    import transformers
    from transformers import trainer_callback

    if point == "step":
        original = trainer_callback.CallbackHandler.on_step_end

        def on_step_end(self, args, state, control):
            if state.global_step == step:
                die()
            return original(self, args, state, control)

        trainer_callback.CallbackHandler.on_step_end = on_step_end
    elif point == "checkpoint":
        original = transformers.Trainer._save_optimizer_and_scheduler

        def save(self, output_dir):
            original(self, output_dir)
            if self.state.global_step == step:
                die()

        transformers.Trainer._save_optimizer_and_scheduler = save
    elif point == "state":
        original = trainer_callback.TrainerState.save_to_json

        def save_to_json(self, json_path):
            if self.global_step == step:
                with open(json_path, "w") as f:
                    f.write('{"global_step": %d, "log_hist' % step)
                    f.flush()
                die()
            return original(self, json_path)

        trainer_callback.TrainerState.save_to_json = save_to_json
    elif point == "final":
        from pipeline.training import kinds

        for kind in kinds.KINDS.values():
            original_save = kind.save

            def save(model, directory, *args, _save=original_save):
                _save(model, directory, *args)
                die()

            kind.save = save
    else:
        raise SystemExit(f"unknown kill point {point}")
    from pipeline.train import main as train_main

    train_main([key])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
