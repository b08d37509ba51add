"""Attention read-out of a saved composition: per head, which mA position each mB position attends to, on
teacher-forced test rows, beside the greedy next tokens of CALM, mA and mB.

Usage, in a directory after `dvc repro` (data/kv_arithmetic/, models/kv_arithmetic/):

    python experiments/table1/attention_readout.py [COMPOSITION_DIR] [DATASET]

COMPOSITION_DIR  a saved composition (default models/kv_arithmetic/calm; composition_experiment.py writes one
                 with SAVE=dir)
DATASET          a prompt/target split of data/kv_arithmetic/ (default kv_math_test)

Environment: MA, MB the bases whose own predictions are shown (default models/kv_arithmetic/mA, .../mB).

For each of the first 6 rows of DATASET, fed whole (prompt + target), prints the row, then one line per
position from the prompt's last token to the target's second-to-last: the current and the next (gold) token,
the greedy next token of CALM, mA and mB, and per head of the first cross-attention the composition runs (its
first connection in anchor-layer order) the attended mA position relative to the query's own (0 = the same
position, -k = k tokens back) with its attention weight. One thread.

docs/table1-calibration-log.md, second session: the read-outs of c3, L1 ("Anchor replay keeps mB's
arithmetic") and of X3 ("An anchor with sinusoidal absolute positions (XGLM) does both").
"""
import argparse
import os

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch
from transformers import AutoModelForCausalLM

from _shared import model_path, rows, world_tokenizer, wrap_cross_attention_sdpa  # puts the repo on sys.path
from pipeline.composition import CALMForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("composition_dir", nargs="?", default=model_path("calm"), metavar="COMPOSITION_DIR")
    parser.add_argument("dataset", nargs="?", default="kv_math_test", metavar="DATASET")
    args = parser.parse_args()

    torch.set_num_threads(1)
    tok = world_tokenizer()
    calm = CALMForCausalLM.from_pretrained(args.composition_dir).eval()
    mA = AutoModelForCausalLM.from_pretrained(os.environ.get("MA", model_path("mA"))).eval()
    mB = AutoModelForCausalLM.from_pretrained(os.environ.get("MB", model_path("mB"))).eval()

    captured = []  # attention probabilities [B, H, T, S] of each cross-attention call
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def recording_sdpa(q, k, v, attn_mask=None, **kw):
        s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask is not None else s
        captured.append(torch.softmax(s, -1))
        return sdpa(q, k, v, attn_mask=attn_mask, **kw)

    wrap_cross_attention_sdpa(recording_sdpa)

    for r in rows(args.dataset)[:6]:
        ids = tok(r["prompt"] + r["target"])["input_ids"]
        x = torch.tensor([ids])
        captured.clear()
        with torch.no_grad():
            lc = calm(input_ids=x).logits[0].argmax(-1)
            la = mA(input_ids=x).logits[0].argmax(-1)
            lb = mB(input_ids=x).logits[0].argmax(-1)
        if not captured:
            raise SystemExit("the composition's forward did not call cross_attention.F.scaled_dot_product_attention: "
                             "update wrap_cross_attention_sdpa in experiments/table1/_shared.py")
        att = captured[0][0]  # [H, T, S]
        toks = tok.convert_ids_to_tokens(ids)
        n_prompt = len(tok(r["prompt"])["input_ids"])
        print(r["prompt"], r["target"])
        for t in range(n_prompt - 1, len(ids) - 1):
            a = att[:, t]  # [H, S]
            tops = [(int(a[h].argmax()) - t, round(float(a[h].max()), 2)) for h in range(a.shape[0])]
            print(f"  pos {t} cur {toks[t]!r} next {toks[t + 1]!r}  calm {tok.convert_ids_to_tokens(int(lc[t]))!r} "
                  f"mA {tok.convert_ids_to_tokens(int(la[t]))!r} mB {tok.convert_ids_to_tokens(int(lb[t]))!r}  "
                  f"att(rel,w)/head {tops}")


if __name__ == "__main__":
    main()
