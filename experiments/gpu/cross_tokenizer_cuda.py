"""The cross-tokenizer composition on a CUDA GPU: what the CPU suite proves (tests/unit/composition/test_alignment.py),
checked on the GPU in fp32 and bf16, and end-to-end generation speed beside each model alone.

Tiny random bodies with the real vocabularies (SmolLM2's byte-level BPE as the anchor's, Qwen2.5's as mA's, and the
other way round), as in the CPU tests; the tokenizers are read from folders holding their tokenizer.json (the test
suite's cache, ~/.cache/calm-repro/test-tokenizers/{smollm2,qwen2.5-tiktoken}).

    python experiments/gpu/cross_tokenizer_cuda.py --tokenizers DIR [--device cuda] [--out summary.json]

DIR holds smollm2/ and qwen/. Prints one line per check and writes the figures as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: it pins the CPU float path before torch loads)
import torch
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))
from tiny_models import randomize_composition, tiny_model  # noqa: E402

from pipeline.composition import CALMForCausalLM, CALMProcessor  # noqa: E402

PROMPTS = ["def add(a, b):\n    return", "人人生而自由，在尊严和权利上一律平等。", "<|im_start|>user\nПривет, как дела?",
           "Emoji: 👩🏽‍💻 🇫🇷 and é vs e\u0301;"]
TRAIN_TEXTS = ["def greet(name):\n    return f'hello, {name}'\n", "كل الناس يولدون أحرارًا ومتساوين في الكرامة.",
               "सभी मनुष्यों को गौरव और अधिकारों के मामले में", "for i in range(10):\n\tprint(i * i)\n"]


def compose(tokenizers, anchor_name, augmenting_name, device, dtype, width=64, layers=4, aug_width=32):
    anchor_tokenizer, augmenting_tokenizer = tokenizers[anchor_name], tokenizers[augmenting_name]
    anchor = tiny_model("llama", width=width, layers=layers, heads=4, seed=0, vocab=len(anchor_tokenizer))
    augmenting = tiny_model("qwen2", width=aug_width, layers=layers, heads=2, seed=1, vocab=len(augmenting_tokenizer))
    calm = CALMForCausalLM.from_models(anchor, augmenting, connections=[(1, 1), (layers - 1, layers - 1)],
                                       processor=CALMProcessor(anchor_tokenizer, augmenting_tokenizer))
    return calm.to(device=device, dtype=dtype)


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'  ' + detail if detail else ''}", flush=True)
    return ok


def properties(tokenizers, anchor_name, augmenting_name, device, dtype) -> dict:
    tag = f"{anchor_name}->{augmenting_name} {str(dtype).split('.')[-1]}"
    calm = compose(tokenizers, anchor_name, augmenting_name, device, dtype)
    ids, mask = calm.processor.anchor_batch(PROMPTS, padding_side="left")
    ids, mask = ids.to(device), mask.to(device)
    settings = dict(max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=calm.processor.anchor_pad_id)
    out = {}
    with torch.no_grad():
        alone = calm.anchor.generate(ids, attention_mask=mask, **settings)
        untrained = calm.generate(PROMPTS, **settings)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        composed_logits = calm(input_ids=ids, attention_mask=mask).logits[mask.bool()]
        anchor_logits = calm.anchor(input_ids=ids, attention_mask=mask, position_ids=positions).logits[mask.bool()]
    out["untrained_equals_anchor_tokens"] = check(f"{tag}: untrained composition generates the anchor's tokens",
                                                  torch.equal(untrained.to(device), alone))
    out["untrained_logits_max_abs_diff"] = (composed_logits - anchor_logits).abs().max().item()
    check(f"{tag}: untrained logits equal the anchor's", out["untrained_logits_max_abs_diff"] == 0.0,
          f"max |diff| {out['untrained_logits_max_abs_diff']:.3g}")
    randomize_composition(calm)
    calm.bridges.to(device=device, dtype=dtype)
    with torch.no_grad():
        cached = calm.generate(ids, attention_mask=mask, use_cache=True, **settings)
        uncached = calm.generate(ids, attention_mask=mask, use_cache=False, **settings)
        single = calm.generate(PROMPTS[1], **settings)
    out["cached_equals_uncached"] = check(f"{tag}: cached generation = uncached", torch.equal(cached, uncached),
                                          f"{(cached != uncached).sum().item()} of {cached.numel()} tokens differ")
    out["mA_changes_output"] = check(f"{tag}: the trained composition differs from the anchor", not torch.equal(cached, alone))
    out["left_padded_row_equals_alone"] = check(f"{tag}: a left-padded row generates what it generates alone",
                                                torch.equal(single[0, -16:].to(device), cached[1, -16:]))
    # causal property: two rows sharing the first t+1 anchor tokens have the same logits up to t
    tokenizer = calm.processor.anchor_tokenizer
    first = tokenizer(PROMPTS[3] + PROMPTS[1] + TRAIN_TEXTS[0])["input_ids"][:40]
    other = tokenizer(TRAIN_TEXTS[1] + TRAIN_TEXTS[2])["input_ids"]
    cuts = [3, 11, 20, 33]
    rows = torch.tensor([first] + [first[: t + 1] + other[: len(first) - t - 1] for t in cuts], device=device)
    with torch.no_grad():
        logits = calm(input_ids=rows).logits.float()
    worst = max((logits[0, : t + 1] - logits[r, : t + 1]).abs().max().item() for r, t in enumerate(cuts, start=1))
    out["causal_prefix_max_abs_diff"] = worst
    check(f"{tag}: text after token t leaves logits up to t unchanged", worst == 0.0, f"max |diff| {worst:.3g}")
    # training: the processor's batch, a loss that falls under the dtype (bf16: autocast over fp32 weights)
    calm = compose(tokenizers, anchor_name, augmenting_name, device, torch.float32)
    calm.requires_grad_(False)
    calm.bridges.requires_grad_(True)
    optimizer = torch.optim.AdamW(calm.bridges.parameters(), lr=3e-3)
    batch = {k: v.to(device) for k, v in calm.processor(TRAIN_TEXTS).items()}
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    losses = []
    for _ in range(30):
        with torch.autocast(device_type=device.split(":")[0], dtype=dtype, enabled=dtype != torch.float32):
            loss = calm(**batch, labels=labels).loss
        loss.backward()
        finite = all(torch.isfinite(p.grad).all() for p in calm.bridges.parameters())
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    out["train_loss_first_last"] = [losses[0], losses[-1]]
    out["train_finite_and_falls"] = check(f"{tag}: 30 training steps, finite gradients, loss falls",
                                          finite and losses[-1] < losses[0], f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    return out


def generation_speed(tokenizers, device, dtype, new_tokens=64, repeats=5) -> dict:
    """End-to-end greedy generation (alignment included) of a width-512 composition beside each model alone."""
    calm = compose(tokenizers, "smollm2", "qwen", device, dtype, width=512, layers=8, aug_width=256)
    randomize_composition(calm)
    calm.bridges.to(device=device, dtype=dtype)
    anchor_alone = tiny_model("llama", width=512, layers=8, heads=4, seed=0, vocab=len(tokenizers["smollm2"]))
    augmenting_alone = tiny_model("qwen2", width=256, layers=8, heads=2, seed=1, vocab=len(tokenizers["qwen"]))
    anchor_alone.to(device=device, dtype=dtype)
    augmenting_alone.to(device=device, dtype=dtype)
    settings = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    a_ids, a_mask = calm.processor.anchor_batch(PROMPTS, padding_side="left")
    m_batch = tokenizers["qwen"](PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    runs = {"calm": lambda: calm.generate(PROMPTS, **settings),
            "anchor_alone": lambda: anchor_alone.generate(a_ids.to(device), attention_mask=a_mask.to(device), **settings),
            "mA_alone": lambda: augmenting_alone.generate(m_batch["input_ids"].to(device),
                                                           attention_mask=m_batch["attention_mask"].to(device), **settings)}
    times = {k: [] for k in runs}
    with torch.no_grad():
        for name, run in runs.items():  # warm-up
            run()
        for _ in range(repeats):
            for name, run in runs.items():
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                times[name].append(time.perf_counter() - start)
    median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    out = {f"{k}_s_per_token": v / new_tokens for k, v in median.items()}
    out["calm_over_anchor_plus_mA"] = median["calm"] / (median["anchor_alone"] + median["mA_alone"])
    print(f"speed {str(dtype).split('.')[-1]}: per generated token (batch {len(PROMPTS)}): CALM {out['calm_s_per_token'] * 1e3:.2f} ms, "
          f"anchor alone {out['anchor_alone_s_per_token'] * 1e3:.2f} ms, mA alone {out['mA_alone_s_per_token'] * 1e3:.2f} ms; "
          f"CALM / (anchor + mA) = {out['calm_over_anchor_plus_mA']:.2f}", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizers", required=True, help="folder holding smollm2/ and qwen/ (tokenizer.json each)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=None, help="write the figures here as JSON")
    parser.add_argument("--repeats", type=int, default=5, help="timed generations per model (median)")
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("error: --device cuda but torch sees no GPU")
    tokenizers = {name: PreTrainedTokenizerFast.from_pretrained(Path(args.tokenizers) / name) for name in ("smollm2", "qwen")}
    summary = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"}
    print(summary, flush=True)
    for dtype in (torch.float32, torch.bfloat16):
        for anchor_name, augmenting_name in (("smollm2", "qwen"), ("qwen", "smollm2")):
            summary[f"{anchor_name}->{augmenting_name} {dtype}"] = properties(tokenizers, anchor_name, augmenting_name,
                                                                             args.device, dtype)
        summary[f"speed {dtype}"] = generation_speed(tokenizers, args.device, dtype, args.new_tokens, args.repeats)
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
