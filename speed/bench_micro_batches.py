"""Training speed with length-sorted micro-batches (`worlds.<world>.micro_batches`) against whole batches, measured
in one run on this machine, through the pipeline's own Trainer path (pipeline.training.trainer.run_trainer).

For each of the code world's training shapes (vanilla/mA 2x128 on mA's rows, mB 2x192 on mB's rows, the CALM
composition of those shapes on D_C rows plus a quarter of anchor replay, as conf/size/code/cpu.yaml) it trains a
few optimizer steps of 32 rows with micro_batches 1 and k, interleaved and repeated, and prints the median
seconds per step of each and their ratio (whole / micro: > 1 means micro-batching is faster). The weights are
random: speed does not depend on them. Needs the world's data (`dvc repro build_data@code`, or it says so).

    python speed/bench_micro_batches.py [--micro-batches 4] [--steps 6] [--repeats 3] [--world code]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", default="code")
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("WANDB_MODE", "disabled")
    os.chdir(REPO_ROOT)

    import torch

    from pipeline.composition import CALMForCausalLM
    from pipeline.errors import PipelineError
    from pipeline.params import compose_params
    from pipeline.tokenization import world_tokenizer
    from pipeline.training.architectures import build_base_model
    from pipeline.training.data import Collator, data_stems, supervised_dataset, world_rows
    from pipeline.training.trainer import run_trainer, set_threads

    params = compose_params([f"world=[{args.world}]"])
    world = params["worlds"][args.world]
    if not (Path("data") / args.world / "summary.json").exists():
        raise SystemExit(f"no data/{args.world}: build it first (dvc repro build_data@{args.world})")
    runtime = params["runtime"]
    set_threads(runtime)
    tokenizer = world_tokenizer(params, args.world)
    models = world["models"]

    def rows(name):
        return world_rows(args.world, data_stems(models[name]))

    def base(arch_of):  # a random model of that model's architecture
        torch.manual_seed(0)
        return build_base_model(models[arch_of]["arch"], tokenizer, world["max_positions"])

    calm_rows = rows("calm")
    calm_rows = calm_rows + rows("mB")[: len(calm_rows) // 3]  # anchor replay: a quarter of the mix
    shapes = {
        "mA (2x128, code rows)": (lambda: base("vanilla"), rows("mA")),
        "mB (2x192, mB rows)": (lambda: base("mB"), rows("mB")),
        "CALM (D_C + replay)": (lambda: CALMForCausalLM.from_models(
            base("mB"), base("vanilla"),
            connections=[tuple(c) for c in models["calm"]["composition"]["connections"][0]],
            final_norm=bool(models["calm"]["composition"].get("final_norm"))), calm_rows),
    }
    tcfg = {"steps": args.steps, "batch_size": 32, "lr": 1e-3, "logging_steps": 1000, "save_steps": 10_000}
    print(f"{args.world}: {torch.get_num_threads()} thread(s), {args.steps} steps of 32 rows, "
          f"micro_batches 1 vs {args.micro_batches}, median of {args.repeats}")
    for label, (make, shape_rows) in shapes.items():
        dataset = supervised_dataset(shape_rows, tokenizer)
        times = {1: [], args.micro_batches: []}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.repeats):
                for k in times:  # interleaved: a load from elsewhere hits both alike
                    try:
                        _, info = run_trainer(make(), dataset, Collator(tokenizer.pad_token_id), tcfg, runtime, r,
                                              Path(tmp) / f"{k}-{r}", "bench", {}, {}, micro_batches=k)
                    except PipelineError as e:
                        raise SystemExit(str(e))
                    times[k].append(info["seconds_this_run"] / args.steps)
        whole, micro = statistics.median(times[1]), statistics.median(times[args.micro_batches])
        print(f"  {label:24s} whole {whole:.3f} s/step  micro {micro:.3f} s/step  ratio {whole / micro:.2f}")


if __name__ == "__main__":
    main()
