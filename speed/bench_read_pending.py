"""What `read_pending` costs a training step with the real pair: SmolLM2-135M-Instruct over Qwen2.5-Coder-0.5B-Instruct,
on D_C rows of the code_xtok world, in one run.

Prints, as ratios to the step that reads only mA's committed tokens (the world's composition without the option):
  shared    read_pending as the composition runs it: a tail token that the row then commits as it was is one slot
            (alignment.PendingLayout), so mA runs ~1.15 times its tokens
  apart     the same composition with a slot for every tail token (`pending_layout(share=False)`: the same states,
            computed again), what read_pending cost before its slots were shared
and mA's slots per committed token in each. A step is forward and backward of the composition on the rows (the
world's connections: every 4th Qwen layer), CPU seconds, the median of interleaved repeats (bench_composition.py).
mA, mB and D_C come from a checkout that built the world (`make table4-xtok`, or its stages up to train@code_xtok/mA):

    python speed/bench_read_pending.py [--root CHECKOUT] [--rows 4] [--repeats 3] [--threads 1]
"""
from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: it pins the CPU float path before torch loads)
import torch

import pipeline.composition.keys_values as keys_values
from pipeline.composition import CALMForCausalLM, CALMProcessor
from pipeline.composition.alignment import pending_layout

CONNECTIONS = [(3, 4), (7, 9), (11, 14), (15, 19), (19, 24), (23, 29)]  # conf/world/code_xtok.yaml


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("."), help="a checkout that built code_xtok's mA and mB")
    parser.add_argument("--rows", type=int, default=4, help="D_C rows in the step (the world's micro-batch: 4)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    models, data = args.root / "models" / "code_xtok", args.root / "data" / "code_xtok" / "composition_train.jsonl"
    if not ((models / "mA" / "config.json").is_file() and (models / "mB" / "config.json").is_file() and data.is_file()):
        sys.exit(f"no built code_xtok world under {args.root}: run `make table4-xtok` there first (or its stages up to "
                 "train@code_xtok/mA), or pass --root")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    anchor = AutoModelForCausalLM.from_pretrained(models / "mB")
    augmenting = AutoModelForCausalLM.from_pretrained(models / "mA", attn_implementation="sdpa")
    processor = CALMProcessor(AutoTokenizer.from_pretrained(models / "mB"), AutoTokenizer.from_pretrained(models / "mA"))
    compositions = {reading: CALMForCausalLM.from_models(anchor, augmenting, connections=CONNECTIONS, final_norm=True,
                                                         processor=processor, read_pending=reading == "pending")
                    for reading in ("committed", "pending")}
    rows = [json.loads(line) for line in data.open()][: args.rows]
    ids, mask = processor.anchor_batch([r["prompt"] + r["target"] for r in rows])
    labels = ids.masked_fill(mask == 0, -100)

    def step(reading: str, layout):
        def run():
            keys_values.pending_layout = layout
            composition = compositions[reading]
            composition(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
            composition.zero_grad(set_to_none=True)
        return run

    steps = {"committed": step("committed", pending_layout), "shared": step("pending", pending_layout),
             "apart": step("pending", functools.partial(pending_layout, share=False))}
    samples = {name: [] for name in steps}
    for _ in range(args.repeats):  # in turns, so that background load affects each alike
        for name, run in steps.items():
            start = time.process_time()
            run()
            samples[name].append(time.process_time() - start)
    keys_values.pending_layout = pending_layout
    medians = {name: statistics.median(values) for name, values in samples.items()}

    alignment = processor.align(ids, mask, pending=True)[0]
    committed = sum(map(len, alignment.ids))
    slots = {share: int(pending_layout(alignment.ids, [0] * len(rows), alignment.visible, alignment.tails, 0,
                                       ids.shape[1], share=share).real.sum()) for share in (True, False)}
    print(f"{len(rows)} D_C rows, {int(mask.sum())} SmolLM2 tokens, {committed} committed Qwen tokens; "
          f"{args.threads} thread(s), median of {args.repeats}")
    print(f"mA slots per committed token: shared {slots[True] / committed:.2f}, apart {slots[False] / committed:.2f}")
    for name in steps:
        print(f"{name:10s} {medians[name]:7.1f} CPU-s a step   ratio to committed-only {medians[name] / medians['committed']:.2f}")


if __name__ == "__main__":
    main()
