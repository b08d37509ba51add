"""Composition runs behind docs/table1-calibration-log.md, outside the pipeline: a plain training loop over a
composition of the world's mA and mB, then its test figures.

Usage, in a directory after `dvc repro` (params.yaml, data/kv_arithmetic/, models/kv_arithmetic/):

    [OPTION=value ...] python experiments/table1/composition_experiment.py STEPS LR CONNECTIONS_JSON [BATCH] [DATA]

    e.g. REPLAY=0.5 LNF=1 ATTN_DROPOUT=0.2 KV_DROPOUT=0.2 SEED=1 T=1 \\
         python experiments/table1/composition_experiment.py 1500 0.01 '[[0,0],[1,1],[1,0]]'

STEPS             optimiser steps (not 20: OneCycleLR's 5% warm-up then ends at step 0 and torch divides by zero)
LR                peak learning rate (AdamW, betas 0.9/0.99, one-cycle schedule with 5% warm-up, grad norm 1)
CONNECTIONS_JSON  (mA layer, mB layer) pairs, e.g. '[[1,1]]'
BATCH             rows per step, drawn at random with replacement (default 64)
DATA              composition_train (default: the pipeline's D_C) or kv_subs_heldin (KV-SUBS training rows whose
                  keys are all held-in), or any other prompt/target split of data/kv_arithmetic/

Prints the parameter count, the training rows, the running loss every 100 steps, then
  RESULT     exact match (%) on the first 200 rows of kv_math_test (held-out keys), kv_math_held_in_test and
             num_math_test, and on the first 200 KV-SUBS test rows with no held-in key (kv_subs_heldout),
             greedy, at most 14 new tokens
  PREFIX_ACC the share of those 200 held-out KV-MATH rows whose scratchpad up to its last "=" (the substituted
             expression) is right, and the first three predictions

Options (environment variables; a flag is on when set to anything but "" or "0"):
  T=n             torch threads (default 2)
  MA, MB          augmenting and anchor model directories (default models/kv_arithmetic/mA, .../mB)
  REPLAY=f        anchor replay: a fraction f of the training rows are mB's NUM-MATH training rows, half of them
                  behind random value-free prefixes
  MASK_ANSWER=1   no loss after the scratchpad's second "=" (the log's `loss_until "="`; replay rows keep all)
  HEADS=n         cross-attention heads (default: mB's)
  WD=w            AdamW weight decay (default 0)
  SEED=s          re-initialises the composition's weights with this seed (and reseeds the row sampling)
  SAVE=dir        saves the trained composition there (read it with attention_readout.py, head_knockout.py,
                  teacher_forced_errors.py)
  EMA=d           evaluates an exponential moving average (decay d) of the composition weights; RAW first prints
                  the last weights' KV-MATH figures
  EVAL_EVERY=k    prints CURVE, held-out/held-in KV-MATH exact match on their first 100 rows, every k steps
The core's own options (pipeline/composition):
  LNF=1           final_norm: a connection from mA's last layer reads it after mA's final norm
  ATTN_DROPOUT=p  attention_dropout on the cross-attention probabilities
  KV_DROPOUT=p    augmenting_dropout: dropout on mA's states where the composition reads them
Variants that patch the cross-attention (the log's runs Q1, Q2 and S4-qk: QKBIAS; R3: RELBIAS; S5-logits: LOGITS;
the log reports no ABSPE run):
  QKBIAS=1        biases on W_Q and W_K (zero; with SEED re-initialised like the weights)
  RELBIAS=1       a learned per-head bias on the scores by query-key distance (0-31; farther keys share 31's);
                  replaces the cross-attention's forward, so ATTN_DROPOUT does not apply
  ABSPE=1         sinusoidal absolute positions added to the query and key inputs; replaces the forward and the
                  key/value projection, so ATTN_DROPOUT and KV_DROPOUT do not apply
  LOGITS=1        connections from mA's last layer read mA's logits (its LM head applied to the final state)
"""
import argparse
import json
import os
import random
import sys
import time
import types

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModelForCausalLM

from _shared import (exact_match, held_in_keys, model_path, rows, world_data_params,  # puts the repo on sys.path
                     world_tokenizer)
from pipeline.composition import CALMForCausalLM
from pipeline.composition.modeling_calm import CrossAttention
from pipeline.training.data import Collator, supervised_dataset
from pipeline.worlds.kv_arithmetic import random_prefixes


def flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def cross_attentions(calm):
    return [m for m in calm.modules() if isinstance(m, CrossAttention)]


def add_qk_biases(calm) -> None:
    """QKBIAS: W_Q and W_K get biases, zero-initialised (weights kept)."""
    for m in cross_attentions(calm):
        for name in ("q_proj", "k_proj"):
            old = getattr(m, name)
            new = nn.Linear(old.in_features, old.out_features, bias=True)
            with torch.no_grad():
                new.weight.copy_(old.weight)
                new.bias.zero_()
            setattr(m, name, new)


def add_relative_position_bias(calm, max_distance: int = 32) -> None:
    """RELBIAS: a learned bias per head and query-key distance (clamped to [0, max_distance - 1]) on the scores."""

    def forward(self, anchor_states, positions, keys, values, allowed, has_key):
        batch, length, width = anchor_states.shape
        q = self._split_heads(self.q_proj(self._norm(anchor_states)))
        q = self._rotate(q, positions)
        S = keys.shape[2]
        delta = (positions[:, :, None] - torch.arange(S)[None, None, :]).clamp(0, max_distance - 1)  # [B,T,S]
        bias = self.rel_bias[:, delta].permute(1, 0, 2, 3)  # [B,H,T,S]
        bias = bias.masked_fill(~allowed, float("-inf"))
        att = F.scaled_dot_product_attention(q, keys, values, attn_mask=bias)
        att = att * has_key
        return self.o_proj(att.transpose(1, 2).reshape(batch, length, width))

    for m in cross_attentions(calm):
        m.rel_bias = nn.Parameter(torch.zeros(m.num_heads, max_distance))
        m.forward = types.MethodType(forward, m)


def add_absolute_positions(calm) -> None:
    """ABSPE: sinusoidal absolute positions added to the query input and to the projected mA states (keys only)."""

    def pe(positions, dim):
        half = dim // 2
        freq = 10000 ** (-torch.arange(half, dtype=torch.float32) / half)
        ang = positions[..., None].float() * freq
        return torch.cat([ang.sin(), ang.cos()], -1)

    def keys_values(self, augmenting_states, positions):
        projected = self._norm(self.f_proj(augmenting_states))
        keys = self._rotate(self._split_heads(self.k_proj(projected + pe(positions, projected.shape[-1]))), positions)
        return keys, self._split_heads(self.v_proj(projected))

    def forward(self, anchor_states, positions, keys, values, allowed, has_key):
        batch, length, width = anchor_states.shape
        q = self._split_heads(self.q_proj(self._norm(anchor_states) + pe(positions, width)))
        q = self._rotate(q, positions)
        att = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed) * has_key
        return self.o_proj(att.transpose(1, 2).reshape(batch, length, width))

    for m in cross_attentions(calm):
        m.forward = types.MethodType(forward, m)
        m.keys_values = types.MethodType(keys_values, m)


def read_logits_from_last_layer(calm, mA, conns) -> None:
    """LOGITS: connections from mA's last layer read mA's logits (its LM head of the final state)."""
    head = mA.get_output_embeddings()
    last = mA.config.num_hidden_layers - 1

    def keys_values(self, augmenting_states, positions):
        return self._orig_kv(head(augmenting_states.to(head.weight.dtype)), positions)

    for c, (i, _) in enumerate(conns):
        if i == last:
            m = calm.bridges[0][c]
            m.f_proj = nn.Linear(head.out_features, m.f_proj.out_features, bias=False)
            m._orig_kv = m.keys_values
            m.keys_values = types.MethodType(keys_values, m)


def training_items(data: str, tok, held: set[str]) -> list[dict]:
    """Tokenised training rows (input_ids, labels, n_prompt), MASK_ANSWER and REPLAY applied."""
    if data == "kv_subs_heldin":
        train_rows = [r for r in rows("kv_subs_train") if set(r["keys"]) <= held]
    else:
        train_rows = rows(data)
    items = supervised_dataset(train_rows, tok, cache=None).to_list()
    if flag("MASK_ANSWER"):  # no loss after the scratchpad's second '='
        eq = tok.convert_tokens_to_ids("=")
        for it in items:
            pos = [i for i, t in enumerate(it["input_ids"]) if t == eq]
            if len(pos) >= 2:
                cut = pos[1] + 1  # labels[i] is the target for position i (HF shifts inside): keep '=' itself
                it["labels"] = it["labels"][:cut] + [-100] * (len(it["labels"]) - cut)
    replay = float(os.environ.get("REPLAY", 0))
    if replay:
        num_math = rows("num_math_train")
        k = int(replay * len(train_rows) / (1 - replay))
        rng = random.Random(1)
        replayed = [num_math[rng.randrange(len(num_math))] for _ in range(k)]
        half = k // 2
        prefixes = random_prefixes(world_data_params(), half, 7)
        replayed = [dict(r, prompt=p + r["prompt"]) for r, p in zip(replayed[:half], prefixes)] + replayed[half:]
        items += supervised_dataset(replayed, tok, cache=None).to_list()
    print("train rows", len(items), "replay", replay, "mask", flag("MASK_ANSWER"))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", type=int, metavar="STEPS")
    parser.add_argument("lr", type=float, metavar="LR")
    parser.add_argument("connections", type=json.loads, metavar="CONNECTIONS_JSON")
    parser.add_argument("batch", nargs="?", type=int, default=64, metavar="BATCH")
    parser.add_argument("data", nargs="?", default="composition_train", metavar="DATA")
    args = parser.parse_args()
    steps, lr, conns, bs = args.steps, args.lr, args.connections, args.batch

    torch.set_num_threads(int(os.environ.get("T", 2)))
    torch.manual_seed(0)
    random.seed(0)
    tok = world_tokenizer()
    mB = AutoModelForCausalLM.from_pretrained(os.environ.get("MB", model_path("mB")))
    mA = AutoModelForCausalLM.from_pretrained(os.environ.get("MA", model_path("mA")))
    calm = CALMForCausalLM.from_models(
        anchor=mB, augmenting=[mA], connections=[[tuple(c) for c in conns]],
        num_heads=int(os.environ.get("HEADS", 0)) or None, final_norm=flag("LNF"),
        attention_dropout=float(os.environ.get("ATTN_DROPOUT", 0)),
        augmenting_dropout=float(os.environ.get("KV_DROPOUT", 0)),
    )
    if flag("QKBIAS"):
        add_qk_biases(calm)
    if flag("RELBIAS"):
        add_relative_position_bias(calm)
    if flag("ABSPE"):
        add_absolute_positions(calm)
    if flag("LOGITS"):
        read_logits_from_last_layer(calm, mA, conns)
    if os.environ.get("SEED"):
        torch.manual_seed(int(os.environ["SEED"]))
        random.seed(int(os.environ["SEED"]))
        for m in cross_attentions(calm):
            m.reset_parameters()
    print("params", calm.num_composition_parameters(), flush=True)

    held = held_in_keys()
    items = training_items(args.data, tok, held)
    col = Collator(tok.pad_token_id)
    opt = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=lr, betas=(0.9, 0.99),
                            weight_decay=float(os.environ.get("WD", 0.0)))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.05)
    eval_every = int(os.environ.get("EVAL_EVERY", 0))
    curve_sets = {d: rows(d)[:100] for d in ["kv_math_test", "kv_math_held_in_test"]}
    ema_decay = float(os.environ.get("EMA", 0))  # moving average of the composition weights, evaluated at the end
    trainable = {n: p for n, p in calm.named_parameters() if p.requires_grad}
    ema = {n: p.detach().clone() for n, p in trainable.items()} if ema_decay else None

    calm.train()
    t0 = time.time()
    run = 0
    for s in range(steps):
        b = col([items[random.randrange(len(items))] for _ in range(bs)])
        loss = calm(**b).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(calm.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        sched.step()
        if ema is not None:
            with torch.no_grad():
                for n, p in trainable.items():
                    ema[n].lerp_(p, 1 - ema_decay)
        run = 0.98 * run + 0.02 * loss.item() if s else loss.item()
        if s % 100 == 0:
            print(s, round(run, 3), round(time.time() - t0), flush=True)
        if eval_every and (s + 1) % eval_every == 0 and s + 1 < steps:  # held-out/held-in curve during training
            calm.eval()
            curve, _ = exact_match(calm, tok, curve_sets, max_new_tokens=14, batch_size=100)
            print("CURVE", s + 1, curve, flush=True)
            calm.train()
    calm.eval()

    if ema is not None:
        raw_sets = {d: rows(d)[:200] for d in ["kv_math_test", "kv_math_held_in_test"]}
        raw, _ = exact_match(calm, tok, raw_sets, max_new_tokens=14, batch_size=100)
        print("RAW", raw, flush=True)
        with torch.no_grad():
            for n, p in trainable.items():
                p.copy_(ema[n])
    sets = {d: rows(d)[:200] for d in ["kv_math_test", "kv_math_held_in_test", "num_math_test"]}
    sets["kv_subs_heldout"] = [r for r in rows("kv_subs_test") if not set(r["keys"]) & held][:200]
    result, _ = exact_match(calm, tok, sets, max_new_tokens=14, batch_size=100)
    print("RESULT", sys.argv[1:], result, "train_s", round(time.time() - t0))
    _, preds = exact_match(calm, tok, {"kv_math_test": sets["kv_math_test"]}, max_new_tokens=14, batch_size=100)
    prefix_acc = sum(p["prediction"].rsplit("=", 1)[0] == p["target"].rsplit("=", 1)[0] for p in preds) / len(preds)
    print("PREFIX_ACC", prefix_acc, preds[:3])
    if os.environ.get("SAVE"):
        calm.save_pretrained(os.environ["SAVE"])


if __name__ == "__main__":
    main()
