"""Speed of the composition relative to its two base models, measured in one run on this machine.

Prints three ratios (issue 2's targets):
  train   composition training step / (mA forward without grad + mB forward and backward)     target <= 1.15
  decode  composition cached decode step / (mA cached step + mB cached step)                   target <= 1.20
  cache   composition uncached / cached generation time at 256 new tokens                      target >= 5

The baselines are strict: mB's backward computes activation gradients only (its weights are frozen, as in the
composition, so weight gradients are not counted to the baseline's cost), and mA's decode step stops at the same
layer as the composition's mA. Each figure is the median of several repeats, interleaved so that a load on the
machine from other processes hits the composition and its baseline alike.

    python speed/bench_composition.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from pipeline.composition import CALMForCausalLM


def llama(width, layers, heads, vocab, seed):
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=width * 8 // 3, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=max(1, heads // 4), max_position_embeddings=4096)
    return LlamaForCausalLM(config).eval()


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def interleaved_medians(functions: dict, repeats: int) -> dict:
    """Median time of each function, run in turns so that background load affects each alike."""
    samples = {name: [] for name in functions}
    for fn in functions.values():
        fn()  # warm-up
    for _ in range(repeats):
        for name, fn in functions.items():
            samples[name] += timed(fn, 1)
    return {name: statistics.median(values) for name, values in samples.items()}


def per_token_times(steps: dict, decode_loop, decode_tokens: int, repeats: int) -> dict:
    """Per-token decode time of each step: (prefill + N steps - prefill alone) / N, from interleaved medians.
    decode_loop(step, n) returns a function that runs the prefill and n - 1 decode steps."""
    loops = {}
    for name, step in steps.items():
        loops[name + "_long"] = decode_loop(step, decode_tokens + 1)
        loops[name + "_prefill"] = decode_loop(step, 1)
    decode = interleaved_medians(loops, repeats)
    return {name: (decode[name + "_long"] - decode[name + "_prefill"]) / decode_tokens for name in steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller models and fewer repeats (a smoke run)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: steadier figures when other processes share the CPU)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    vocab = 8192
    if args.quick:
        anchor_shape, augmenting_shape, batch, length, repeats, decode_tokens = (256, 8, 4), (128, 4, 4), 2, 32, 3, 16
    else:
        anchor_shape, augmenting_shape, batch, length, repeats, decode_tokens = (512, 16, 8), (256, 8, 4), 4, 128, 7, 64

    anchor = llama(*anchor_shape, vocab, seed=0)
    augmenting = llama(*augmenting_shape, vocab, seed=1)
    # Separate copies for the baselines: the composition truncates its mA and hooks its mB.
    anchor_alone = llama(*anchor_shape, vocab, seed=0).requires_grad_(False)
    augmenting_alone = llama(*augmenting_shape, vocab, seed=1).requires_grad_(False)
    calm = CALMForCausalLM.from_models(anchor, augmenting)  # paper default: every 4th mA layer
    with torch.no_grad():
        for p in calm.bridges.parameters():
            p.normal_(0, 0.02)
    deepest = max(i for i, _ in calm.config.augmenting[0]["connections"])
    del augmenting_alone.model.layers[deepest + 1 :]
    print(f"mB: llama {anchor_shape[1]} layers x {anchor_shape[0]}; mA: llama {augmenting_shape[1]} layers x "
          f"{augmenting_shape[0]}; connections {calm.config.augmenting[0]['connections']}; "
          f"added parameters {calm.num_composition_parameters():,}; batch {batch} x {length} tokens; "
          f"{torch.get_num_threads()} threads")

    ids = torch.randint(0, vocab, (batch, length))
    labels = ids.clone()

    # ----- training step -----
    optimizer = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=1e-4)
    calm.train()

    def composition_step():
        loss = calm(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def baseline_step():
        with torch.no_grad():
            augmenting_alone.model(input_ids=ids)
        embeddings = anchor_alone.get_input_embeddings()(ids).detach().requires_grad_(True)
        loss = anchor_alone(inputs_embeds=embeddings, labels=labels).loss
        loss.backward()

    train = interleaved_medians({"composition": composition_step, "baseline": baseline_step}, repeats)
    calm.eval()

    # ----- cached decode step -----
    def decode_loop(step, steps):
        def run():
            cache = None
            mask = torch.ones(batch, length, dtype=torch.long)
            tokens = ids
            with torch.no_grad():
                for _ in range(steps):
                    out = step(tokens, mask, cache)
                    cache = out.past_key_values
                    if hasattr(out, "logits"):
                        tokens = out.logits[:, -1:].argmax(-1)
                    else:
                        tokens = ids[:, :1]
                    mask = torch.cat([mask, mask.new_ones(batch, 1)], dim=1)
        return run

    def positions(mask, tokens):
        return (mask.cumsum(-1) - 1)[:, -tokens.shape[1] :]

    def calm_step(tokens, mask, cache):
        return calm(input_ids=tokens, attention_mask=mask, past_key_values=cache, use_cache=True, logits_to_keep=1)

    def anchor_step(tokens, mask, cache):
        return anchor_alone(input_ids=tokens, attention_mask=mask, position_ids=positions(mask, tokens),
                            past_key_values=cache, use_cache=True, logits_to_keep=1)

    def augmenting_step(tokens, mask, cache):
        return augmenting_alone.model(input_ids=tokens, attention_mask=mask, position_ids=positions(mask, tokens),
                                      past_key_values=cache, use_cache=True)

    per_token = per_token_times({"composition": calm_step, "anchor": anchor_step, "augmenting": augmenting_step},
                                decode_loop, decode_tokens, repeats)

    # ----- cached vs uncached generation, 256 new tokens -----
    # One sequence with a 64-token prompt: cached decoding of a single sequence is bound by reading the weights
    # once per token, so it is the regime where caching gains least on a CPU.
    prompt = ids[:1, :64]
    settings = dict(max_new_tokens=256, min_new_tokens=256, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        start = time.perf_counter()
        cached_out = calm.generate(prompt, use_cache=True, **settings)
        cached = time.perf_counter() - start
        start = time.perf_counter()
        uncached_out = calm.generate(prompt, use_cache=False, **settings)
        uncached = time.perf_counter() - start
    assert torch.equal(cached_out, uncached_out), "cached and uncached generations differ"

    train_ratio = train["composition"] / train["baseline"]
    decode_ratio = per_token["composition"] / (per_token["anchor"] + per_token["augmenting"])
    cache_ratio = uncached / cached
    print(f"train step: composition {train['composition'] * 1e3:.0f} ms, mA fwd (no grad) + mB fwd+bwd "
          f"{train['baseline'] * 1e3:.0f} ms -> ratio {train_ratio:.3f} (target <= 1.15)")
    print(f"decode step: composition {per_token['composition'] * 1e3:.2f} ms/token, mA {per_token['augmenting'] * 1e3:.2f}"
          f" + mB {per_token['anchor'] * 1e3:.2f} ms/token -> ratio {decode_ratio:.3f} (target <= 1.2)")
    print(f"256 new tokens: cached {cached:.2f} s, uncached {uncached:.2f} s -> {cache_ratio:.1f}x faster (target >= 5)")
    ok = train_ratio <= 1.15 and decode_ratio <= 1.2 and cache_ratio >= 5
    print("all targets met" if ok else "TARGET MISSED")


if __name__ == "__main__":
    main()
