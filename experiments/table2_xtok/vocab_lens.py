"""Can one linear map carry Gemma's next-word prediction into SmolLM2's vocabulary? A probe for issue 32 (DEV rows
only): the trained bridges read Gemma weakly (docs/results-table2-xtok.md, B9: 1.5% of the bits), and they would have
to learn a map from Gemma's 262k-token output space to SmolLM2's 49k from ~18k target tokens. If a map fitted on the
two tied embedding tables alone (no training text) already turns Gemma's final states into SmolLM2 logits that
predict the reference, a bridge could start from it.

  map       M (576 x 640), least squares over the token strings both vocabularies hold (E_smol[s] M ~ E_gemma[g]),
            so that E_smol (M h) ~ Gemma's logits on the shared strings for any Gemma final state h
  rows      the DEV slice's FLORES rows (`flores_dev`, the first --per-group of each language): prompt + reference
  positions the reference's SmolLM2 tokens whose first byte is also a Gemma token boundary (there both models
            predict the same next token's text from the same prefix)
  figures   top-1 accuracy on those tokens: mB alone; the lens (argmax of E_smol M h, h Gemma's final state at the
            boundary); Gemma itself (its argmax piece's text equals the token's); and mean bits per token of mB alone
            and of mB's logits plus lambda x the lens' (a fusion no parameter was trained for)
  ALiBi     the same fusion with the lens as a bridge would deliver it at init with zero queries and keys: each of
            mB's heads (its head_dim slice of M h) averages Gemma's states up to the boundary with the recency bias'
            weights (softmax of -slope_h x distance, slopes 2^(-8(h+1)/H)), not the latest state alone; --steep:
            one slope for every head instead (how steep a start must be to read the latest state)
  worlds    languages_xtok (Gemma -> SmolLM2, FLORES rows after "English: "); --world code_xtok (Qwen2.5-Coder ->
            SmolLM2, a code set's prompt continued by its target); a test split is refused

    python experiments/table2_xtok/vocab_lens.py [--per-group 5] [--root <a build>]
    python experiments/table2_xtok/vocab_lens.py --world code_xtok --set cc_dev --per-group 32 --root <a build>
"""
from __future__ import annotations

import argparse
import functools
import json
import math
from pathlib import Path

import pipeline  # noqa: F401  (first: pins the float path)
import torch


@functools.cache
def token_bytes(tokenizer):
    """The project's bytes of each token (pipeline.composition's TokenBytes: `▁` as a space, byte-level BPE's
    characters as the bytes they stand for), built once per tokenizer (it reads the whole vocabulary)."""
    from pipeline.composition.token_bytes import TokenBytes

    return TokenBytes(tokenizer, "vocab_lens")


def shared_strings(smol, gemma) -> tuple[list[int], list[int]]:
    """(SmolLM2 ids, Gemma ids) of the non-blank token byte strings both vocabularies hold, each string once: the
    pairs the composition's lexical start fits its map on (pipeline/composition/lexical_start.py)."""
    from pipeline.composition.lexical_start import shared_strings as shared_token_strings

    return shared_token_strings(token_bytes(smol), token_bytes(gemma))


def boundaries(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """ids and byte spans (start, end) of each token of text: a UTF-8 character split over tokens gives each token
    its own bytes (character offsets would give both the whole character)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids, token_bytes(tokenizer).spans(ids)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-group", type=int, default=5)
    parser.add_argument("--root", default=".", help="a checkout that built the world's mA and mB")
    parser.add_argument("--world", default="languages_xtok", help="a cross-tokenizer world (code_xtok's mA: Qwen)")
    parser.add_argument("--set", default="flores_dev", help="a DEV split of data/<world>/ (never a test split)")
    parser.add_argument("--lambdas", default="0.25,0.5,1.0")
    parser.add_argument("--steep", default="1,2,4", help="one slope for every head: the fusion at the first lambda "
                                                         "with the lens averaged as such a recency bias would")
    args = parser.parse_args(argv)
    from pipeline.errors import UserError
    from pipeline.io import read_jsonl

    if "test" in args.set:
        raise UserError(f"{args.set}: a test split; this probe reads DEV rows only")
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model

    root = Path(args.root)
    smol_tok, gemma_tok = (load_tokenizer(root / f"models/{args.world}/{m}") for m in ("mB", "mA"))
    smol, gemma = (load_trained_model(root / f"models/{args.world}/{m}").eval() for m in ("mB", "mA"))
    s_ids, g_ids = shared_strings(smol_tok, gemma_tok)
    e_smol = smol.get_output_embeddings().weight.detach().double()
    e_gemma = gemma.get_output_embeddings().weight.detach().double()
    held = torch.arange(len(s_ids)) % 10 == 0   # a tenth of the shared strings to say how well the map fits
    fit = torch.linalg.lstsq(e_smol[s_ids][~held], e_gemma[g_ids][~held]).solution          # 576 x 640
    residual = e_smol[s_ids][held] @ fit - e_gemma[g_ids][held]
    r2 = 1 - residual.pow(2).sum().item() / (e_gemma[g_ids][held] - e_gemma[g_ids][held].mean(0)).pow(2).sum().item()
    fit = torch.linalg.lstsq(e_smol[s_ids], e_gemma[g_ids]).solution.float()
    head = e_smol.float()   # SmolLM2's output embeddings, in the dtype the lens is scored in (once, not per token)

    lambdas = [float(x) for x in args.lambdas.split(",")]
    rows, seen = [], {}
    for row in read_jsonl(root / f"data/{args.world}/{args.set}.jsonl"):
        if seen.setdefault(row["group"], 0) < args.per_group:
            seen[row["group"]] += 1
            rows.append(row)
    # a FLORES row's reference is the bare English after "English:" (the answer starts with a space); a code row's
    # target continues its prompt as it stands
    joint = " " if args.world == "languages_xtok" else ""
    counts = {"tokens": 0, "mB": 0, "lens": 0, "mA": 0}
    bits = {"mB": 0.0, **{f"fusion {lam}": 0.0 for lam in lambdas}, **{f"ALiBi fusion {lam}": 0.0 for lam in lambdas}}
    heads = smol.config.num_attention_heads
    slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads)
    steep = [float(x) for x in args.steep.split(",") if x]
    bits.update({f"slope {slope} fusion {lambdas[0]}": 0.0 for slope in steep})
    with torch.no_grad():
        for row in rows:
            target_text = row["target"].strip() if joint else row["target"].rstrip("\n")
            prompt, text = row["prompt"], row["prompt"] + joint + target_text
            start = len(prompt.encode())
            s_tokens, s_spans = boundaries(smol_tok, text)
            g_tokens, g_spans = boundaries(gemma_tok, text)
            bos = [gemma_tok.bos_token_id] if gemma_tok.bos_token_id is not None else []
            g_out = gemma(torch.tensor([bos + g_tokens]), output_hidden_states=True)
            g_final, g_logits = g_out.hidden_states[-1][0, len(bos):], g_out.logits[0, len(bos):]
            s_logits = smol(torch.tensor([s_tokens])).logits[0]
            g_ending = {end: i for i, (_, end) in enumerate(g_spans)}
            projected = g_final.float() @ fit.T                                   # [Gemma tokens, 576]: M h
            for k in range(1, len(s_tokens)):
                a, _ = s_spans[k]
                if a < start or (a not in g_ending):
                    continue
                target, i = s_tokens[k], g_ending[a]
                lens = head @ projected[i]
                weights = torch.softmax(-slopes[:, None] * (i - torch.arange(i + 1))[None, :].float(), -1)  # [H, i+1]
                blended = torch.einsum("hj,jhd->hd", weights, projected[: i + 1].view(i + 1, heads, -1)).reshape(-1)
                alibi_lens = head @ blended
                base = s_logits[k - 1].float()
                counts["tokens"] += 1
                counts["mB"] += int(base.argmax()) == target
                counts["lens"] += int(lens.argmax()) == target
                counts["mA"] += token_bytes(gemma_tok)(int(g_logits[i].argmax())) == token_bytes(smol_tok)(target)
                bits["mB"] -= torch.log_softmax(base, -1)[target].item() / math.log(2)
                for lam in lambdas:
                    bits[f"fusion {lam}"] -= torch.log_softmax(base + lam * lens, -1)[target].item() / math.log(2)
                    blend = torch.log_softmax(base + lam * alibi_lens, -1)[target].item()
                    bits[f"ALiBi fusion {lam}"] -= blend / math.log(2)
                for slope in steep:   # every head at one slope: how steep a start must be to read the latest state
                    w = torch.softmax(-slope * (i - torch.arange(i + 1)).float(), -1)
                    fused = base + lambdas[0] * (head @ (w @ projected[: i + 1]))
                    key = f"slope {slope} fusion {lambdas[0]}"
                    bits[key] -= torch.log_softmax(fused, -1)[target].item() / math.log(2)
    n = max(counts["tokens"], 1)
    print(json.dumps({"shared_strings": len(s_ids), "map_r2_held_out": round(r2, 4), "rows": len(rows),
                      "aligned_tokens": counts["tokens"],
                      "top1": {k: round(100 * counts[k] / n, 1) for k in ("mB", "lens", "mA")},
                      "bits_per_token": {k: round(v / n, 3) for k, v in bits.items()}}))


if __name__ == "__main__":
    from pipeline.cli import cli

    cli(main)()
