"""Per (connection, head) knock-out of a saved composition.

Usage, in a directory after `dvc repro` (data/kv_arithmetic/, models/kv_arithmetic/):

    python experiments/table1/head_knockout.py [COMPOSITION_DIR] [N_ROWS]

COMPOSITION_DIR  a saved composition (default models/kv_arithmetic/calm)
N_ROWS           rows of each test set scored (default 100)

Zeroes one head of one connection at a time (the head's attention output, before W_O) and prints teacher-forced
exact match in % (every target token, then end of text, is the argmax: the same as greedy exact match) on the
first N_ROWS rows of kv_math_test, kv_math_held_in_test and num_math_test: first with nothing knocked out
("knockout None"), then for each (c, h). c numbers the cross-attentions in the order a forward pass runs them
(anchor-layer order; the first line printed maps each c to its (augmenting model, mA layer, mB layer)), h the
head; connections and heads are read from the composition (3 and 4 for the cpu preset's). One thread.

docs/table1-calibration-log.md, third session: "Head knock-out on the pipeline's seed-1 composition"
(`head_knockout.py models/calm 100` in the layout of the time, models/kv_arithmetic/calm now).
"""
import argparse

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch

from _shared import (cross_attention_call_order, model_path, rows, world_tokenizer,  # puts the repo on sys.path
                     wrap_cross_attention_sdpa)
from pipeline.composition import CALMForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("composition_dir", nargs="?", default=model_path("calm"), metavar="COMPOSITION_DIR")
    parser.add_argument("n_rows", nargs="?", type=int, default=100, metavar="N_ROWS")
    args = parser.parse_args()

    torch.set_num_threads(1)
    tok = world_tokenizer()
    calm = CALMForCausalLM.from_pretrained(args.composition_dir).eval()
    calls = cross_attention_call_order(calm.config)
    n_connections, n_heads = len(calls), calm.bridges[0][0].num_heads  # every connection has the same heads
    print("cross-attention calls (c: augmenting model, mA layer, mB layer):", dict(enumerate(calls)), flush=True)

    state = {"call": 0, "knockout": None}  # knockout: (c, h) or None
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def knockout_sdpa(q, k, v, attn_mask=None, **kw):
        out = sdpa(q, k, v, attn_mask=attn_mask, **kw)
        c = state["call"] % n_connections
        state["call"] += 1
        if state["knockout"] is not None and state["knockout"][0] == c:
            out = out.clone()
            out[:, state["knockout"][1]] = 0
        return out

    wrap_cross_attention_sdpa(knockout_sdpa)
    eos = tok.eos_token_id
    sets = {name: rows(name)[: args.n_rows] for name in ["kv_math_test", "kv_math_held_in_test", "num_math_test"]}

    def score(set_rows):
        ok = 0
        for r in set_rows:
            p = tok(r["prompt"])["input_ids"]
            t = tok(r["target"], add_special_tokens=False)["input_ids"] + [eos]
            state["call"] = 0
            with torch.no_grad():
                logits = calm(input_ids=torch.tensor([p + t])).logits[0]
            if state["call"] != n_connections:
                raise SystemExit(f"expected {n_connections} cross-attention calls per forward, saw {state['call']}: "
                                 "update wrap_cross_attention_sdpa in experiments/table1/_shared.py")
            ok += logits[len(p) - 1 : len(p) + len(t) - 1].argmax(-1).tolist() == t
        return round(100 * ok / len(set_rows), 1)

    for knockout in [None] + [(c, h) for c in range(n_connections) for h in range(n_heads)]:
        state["knockout"] = knockout
        print("knockout", knockout, {name: score(set_rows) for name, set_rows in sets.items()}, flush=True)


if __name__ == "__main__":
    main()
