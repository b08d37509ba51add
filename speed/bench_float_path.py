"""What pinning the CPU float path costs (pipeline/float_path.py), measured in one run on this machine.

Times a composition training step (a CALM of two small Llamas, the Table 1 CPU preset's shape: width 128, 2+2
layers, batch 32 x 48 tokens) on each float path, in fresh processes (the path is chosen before torch loads), and
prints each path's step time over the native path's:

    native 1.00 | avx2 (the default) r | portable r | scalar r

Processes of the paths alternate, repeats times, and each figure is the median over all its repeats, so that a
load from other processes hits every path alike. On a CPU whose widest kernels are AVX2 the avx2 path differs
from native only where MKL or oneDNN would have picked another code path for this CPU.

    python speed/bench_float_path.py [--repeats 3] [--steps 8] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import pipeline
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from pipeline.composition import CALMConfig, CALMForCausalLM
from pipeline import float_path

steps, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)

def llama(seed):
    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=512, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128))

model = CALMForCausalLM.from_models(llama(0), [llama(1)])
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
ids = torch.randint(0, 64, (32, 48), generator=torch.Generator().manual_seed(0))
times = []
for i in range(steps + 1):
    t0 = time.perf_counter()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward(); opt.step(); opt.zero_grad()
    if i:  # the first step warms up
        times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": statistics.median(times), **float_path.describe()}))
"""


def measure(path: str, steps: int, threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(steps), str(threads)], env={**env, "CALM_FLOAT_PATH": path},
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: the {path} probe failed: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2: the published runtime)")
    args = parser.parse_args()
    paths = ("native", "avx2", "portable", "scalar")
    samples: dict[str, list[float]] = {p: [] for p in paths}
    kernels = {}
    for _ in range(args.repeats):
        for p in paths:
            r = measure(p, args.steps, args.threads)
            samples[p].append(r["seconds"])
            kernels[p] = r.get("cpu_capability")
    median = {p: statistics.median(v) for p, v in samples.items()}
    print(f"composition training step, {args.threads} thread(s), median of {args.repeats} x {args.steps} steps:")
    for p in paths:
        print(f"  {p:8s} ATen {kernels[p]:8s} {median[p] * 1000:7.1f} ms/step")
    print("ratio to native: " + " | ".join(f"{p} {median[p] / median['native']:.2f}" for p in paths))


if __name__ == "__main__":
    main()
