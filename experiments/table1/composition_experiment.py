"""Composition experiments behind docs/table1-calibration-log.md (not part of the pipeline).

Run from a directory holding data/kv_arithmetic/, models/{tokenizer,mA,mB}/ and params.yaml (e.g. after
`dvc repro`):  python scripts/calibration/composition_experiment.py STEPS LR CONNECTIONS_JSON [BATCH] [DATA]
DATA: composition_train (default) or kv_subs_heldin (KV-SUBS rows whose keys are all held-in).
A plain training loop (AdamW, one-cycle schedule); prints the running loss, then exact match on the first
200 rows of each test set, "substitution" accuracy (the scratchpad up to its last "=") as PREFIX_ACC.

Environment options:  T threads (default 2); MA, MB model dirs; REPLAY anchor replay fraction (mB's
NUM-MATH rows, half behind random prefixes); MASK_ANSWER=1 (loss up to the scratchpad's second "=" only);
HEADS cross-attention heads; WD weight decay; SEED re-initialises the composition with this seed;
SAVE directory to save the composition to; EMA=d evaluates an exponential moving average (decay d) of the
composition weights (RAW prints the last weights' KV-MATH figures first); EVAL_EVERY=k prints
held-out/held-in KV-MATH accuracy (first 100 rows) every k steps.  Variants that patch the cross-attention (runs Q1, Q2, R3, X2,
Z5 of the log): QKBIAS=1 (biases on W_Q, W_K), RELBIAS=1 (learned per-head relative-position bias),
ABSPE=1 (sinusoidal absolute positions added to the query and key inputs). The core's own options:
LNF=1 (final_norm: read mA's last layer after its final norm), ATTN_DROPOUT=p (attention_dropout),
KV_DROPOUT=p (augmenting_dropout: dropout on mA's states where the composition reads them). LOGITS=1: connections
from mA's last layer read mA's logits (its LM head applied to the final state) instead (run S5-logits).
"""
import sys, json, time, torch, random
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
from transformers import AutoModelForCausalLM
from pipeline.composition import CALMForCausalLM
from pipeline.tokenizer import load_tokenizer
from pipeline.train import SupervisedDataset, Collator
from pipeline.config import read_jsonl
from pipeline.evaluate import evaluate_model
torch.set_num_threads(int(__import__('os').environ.get('T', 2)))
steps, lr, conns = int(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
bs = int(sys.argv[4]) if len(sys.argv) > 4 else 64
data = sys.argv[5] if len(sys.argv) > 5 else 'composition_train'
mA_dir = __import__('os').environ.get('MA', 'models/mA'); mB_dir = __import__('os').environ.get('MB', 'models/mB')
torch.manual_seed(0); random.seed(0)
tok = load_tokenizer()
mB = AutoModelForCausalLM.from_pretrained(mB_dir); mA = AutoModelForCausalLM.from_pretrained(mA_dir)
calm = CALMForCausalLM.from_models(anchor=mB, augmenting=[mA], connections=[[tuple(c) for c in conns]], num_heads=int(__import__('os').environ.get('HEADS', 0)) or None,
                                   final_norm=bool(__import__('os').environ.get('LNF')), attention_dropout=float(__import__('os').environ.get('ATTN_DROPOUT', 0)),
                                   augmenting_dropout=float(__import__('os').environ.get('KV_DROPOUT', 0)))
if __import__('os').environ.get('QKBIAS'):
    import torch.nn as nn
    for m in calm.modules():
        if m.__class__.__name__ == 'CrossAttention':
            for nm in ('q_proj', 'k_proj'):
                old_l = getattr(m, nm); new_l = nn.Linear(old_l.in_features, old_l.out_features, bias=True)
                with torch.no_grad(): new_l.weight.copy_(old_l.weight); new_l.bias.zero_()
                setattr(m, nm, new_l)
if __import__('os').environ.get('RELBIAS'):
    import torch.nn as nn, torch.nn.functional as F2, types
    import pipeline.composition.modeling_calm as mc
    R = 32
    def fwd(self, anchor_states, positions, keys, values, allowed, has_key):
        batch, length, width = anchor_states.shape
        q = self._split_heads(self.q_proj(self._norm(anchor_states)))
        q = self._rotate(q, positions)
        S = keys.shape[2]
        delta = (positions[:, :, None] - torch.arange(S)[None, None, :]).clamp(0, R - 1)  # [B,T,S]
        bias = self.rel_bias[:, delta].permute(1, 0, 2, 3)  # [B,H,T,S]
        bias = bias.masked_fill(~allowed, float('-inf'))
        att = F2.scaled_dot_product_attention(q, keys, values, attn_mask=bias)
        att = att * has_key
        return self.o_proj(att.transpose(1, 2).reshape(batch, length, width))
    for m in calm.modules():
        if m.__class__.__name__ == 'CrossAttention':
            m.rel_bias = nn.Parameter(torch.zeros(m.num_heads, R))
            m.forward = types.MethodType(fwd, m)
if __import__('os').environ.get('ABSPE'):
    import types, math
    def pe(positions, dim):
        half = dim // 2
        freq = 10000 ** (-torch.arange(half, dtype=torch.float32) / half)
        ang = positions[..., None].float() * freq
        return torch.cat([ang.sin(), ang.cos()], -1)
    def kv_(self, augmenting_states, positions):
        projected = self._norm(self.f_proj(augmenting_states))
        keys = self._rotate(self._split_heads(self.k_proj(projected + pe(positions, projected.shape[-1]))), positions)
        return keys, self._split_heads(self.v_proj(projected))
    def fwd(self, anchor_states, positions, keys, values, allowed, has_key):
        batch, length, width = anchor_states.shape
        q = self._split_heads(self.q_proj(self._norm(anchor_states) + pe(positions, width)))
        q = self._rotate(q, positions)
        att = torch.nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=allowed) * has_key
        return self.o_proj(att.transpose(1, 2).reshape(batch, length, width))
    for m in calm.modules():
        if m.__class__.__name__ == 'CrossAttention':
            m.forward = types.MethodType(fwd, m); m.keys_values = types.MethodType(kv_, m)
if __import__('os').environ.get('LOGITS'):  # connections from mA's last layer read mA's logits (its LM head of the final state)
    import types, torch.nn as nn
    head = mA.get_output_embeddings(); last = mA.config.num_hidden_layers - 1
    def kv_logits(self, augmenting_states, positions):
        return self._orig_kv(head(augmenting_states.to(head.weight.dtype)), positions)
    for c, (i, _) in enumerate(conns):
        if i == last:
            m = calm.bridges[0][c]
            m.f_proj = nn.Linear(head.out_features, m.f_proj.out_features, bias=False)
            m._orig_kv = m.keys_values; m.keys_values = types.MethodType(kv_logits, m)
if __import__('os').environ.get('SEED'):
    torch.manual_seed(int(__import__('os').environ['SEED'])); random.seed(int(__import__('os').environ['SEED']))
    for m in calm.modules():
        if m.__class__.__name__ == 'CrossAttention': m.reset_parameters()
print('params', calm.num_composition_parameters(), flush=True)
held = {r['key'] for r in read_jsonl('data/kv_arithmetic/d_kv.jsonl') if r['held_in']}
if data == 'kv_subs_heldin':
    trows = [r for r in read_jsonl('data/kv_arithmetic/kv_subs_train.jsonl') if set(r['keys']) <= held]
else:
    trows = read_jsonl(f'data/kv_arithmetic/{data}.jsonl')
import os
from pipeline.config import load_params
from pipeline.worlds.kv_arithmetic import random_prefixes
wcfg = load_params()['worlds']['kv_arithmetic']
replay = float(os.environ.get('REPLAY', 0))
ds = SupervisedDataset(trows, tok)
if os.environ.get('MASK_ANSWER'):  # no loss after the scratchpad's second '='
    eq = tok.convert_tokens_to_ids('=')
    for it in ds.items:
        pos = [i for i, t in enumerate(it['input_ids']) if t == eq]
        if len(pos) >= 2:
            cut = pos[1] + 1  # labels[i] is the target for position i (HF shifts inside): keep '=' itself
            it['labels'] = it['labels'][:cut] + [-100] * (len(it['labels']) - cut)
if replay:
    nm = read_jsonl('data/kv_arithmetic/num_math_train.jsonl')
    k = int(replay * len(trows) / (1 - replay))
    rng = random.Random(1); rows = [nm[rng.randrange(len(nm))] for _ in range(k)]
    half = k // 2; pre = random_prefixes(wcfg, half, 7)
    rows = [dict(r, prompt=p + r['prompt']) for r, p in zip(rows[:half], pre)] + rows[half:]
    ds.items += SupervisedDataset(rows, tok).items
print('train rows', len(ds), 'replay', replay, 'mask', bool(os.environ.get('MASK_ANSWER')))
col = Collator(tok.pad_token_id)
opt = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=lr, betas=(0.9, 0.99), weight_decay=float(__import__('os').environ.get('WD', 0.0)))
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.05)
EVAL_EVERY = int(os.environ.get('EVAL_EVERY', 0))
curve_sets = {d: read_jsonl(f'data/kv_arithmetic/{d}.jsonl')[:100] for d in ['kv_math_test', 'kv_math_held_in_test']}
EMA = float(os.environ.get('EMA', 0))  # exponential moving average of the composition weights, evaluated at the end
trainable = {n: p for n, p in calm.named_parameters() if p.requires_grad}
ema = {n: p.detach().clone() for n, p in trainable.items()} if EMA else None
calm.train(); t0 = time.time(); run = 0
for s in range(steps):
    b = col([ds[random.randrange(len(ds))] for _ in range(bs)])
    loss = calm(**b).loss; loss.backward(); torch.nn.utils.clip_grad_norm_(calm.parameters(), 1.0); opt.step(); opt.zero_grad(); sched.step()
    if ema is not None:
        with torch.no_grad():
            for n, p in trainable.items(): ema[n].lerp_(p, 1 - EMA)
    run = 0.98 * run + 0.02 * loss.item() if s else loss.item()
    if s % 100 == 0: print(s, round(run, 3), round(time.time() - t0), flush=True)
    if EVAL_EVERY and (s + 1) % EVAL_EVERY == 0 and s + 1 < steps:  # held-out/held-in curve during training
        calm.eval()
        curve, _ = evaluate_model(calm, tok, curve_sets, max_new_tokens=14, batch_size=100, progress=False)
        print('CURVE', s + 1, {k: v['accuracy'] for k, v in curve.items()}, flush=True)
        calm.train()
calm.eval()
if ema is not None:
    rawsets = {d: read_jsonl(f'data/kv_arithmetic/{d}.jsonl')[:200] for d in ['kv_math_test', 'kv_math_held_in_test']}
    m, _ = evaluate_model(calm, tok, rawsets, max_new_tokens=14, batch_size=100, progress=False)
    print('RAW', {k: v['accuracy'] for k, v in m.items()}, flush=True)
    with torch.no_grad():
        for n, p in trainable.items(): p.copy_(ema[n])
sets = {d: read_jsonl(f'data/kv_arithmetic/{d}.jsonl')[:200] for d in ['kv_math_test', 'kv_math_held_in_test', 'num_math_test']}
sets['kv_subs_heldout'] = [r for r in read_jsonl('data/kv_arithmetic/kv_subs_test.jsonl') if not set(r['keys']) & held][:200]
m, _ = evaluate_model(calm, tok, sets, max_new_tokens=14, batch_size=100, progress=False)
print('RESULT', sys.argv[1:], {k: v['accuracy'] for k, v in m.items()}, 'train_s', round(time.time() - t0))
_, preds = evaluate_model(calm, tok, {'kv_math_test': sets['kv_math_test']}, max_new_tokens=14, batch_size=100, progress=False)
pre = sum(p['prediction'].rsplit('=', 1)[0] == p['target'].rsplit('=', 1)[0] for p in preds) / len(preds)
print('PREFIX_ACC', pre, preds[:3])
out = os.environ.get('SAVE')
if out:
    calm.save_pretrained(out)
