"""Per (connection, head) knock-out of a saved composition (docs/table1-calibration-log.md, third session).

Run where data/ and models/ are (e.g. a clone after `dvc repro`):
python scripts/calibration/head_knockout.py models/calm [N_ROWS]
Zeroes one head of one connection at a time and prints teacher-forced exact match (all target tokens, then
end of text, are the argmax: the same as greedy exact match) on the first N_ROWS rows of each test set.
"""
import sys, torch, types
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
import pipeline.composition.modeling_calm as mc
from pipeline.composition import CALMForCausalLM
from pipeline.tokenizer import load_tokenizer
from pipeline.config import read_jsonl
torch.set_num_threads(1)
tok = load_tokenizer()
calm = CALMForCausalLM.from_pretrained(sys.argv[1]).eval()
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
ST = {'call': 0, 'ko': None, 'nconn': 3}
orig = torch.nn.functional.scaled_dot_product_attention
def sdpa(q, k, v, attn_mask=None, **kw):
    out = orig(q, k, v, attn_mask=attn_mask, **kw)
    c = ST['call'] % ST['nconn']; ST['call'] += 1
    if ST['ko'] is not None and ST['ko'][0] == c:
        out = out.clone(); out[:, ST['ko'][1]] = 0
    return out
mc.F = types.SimpleNamespace(scaled_dot_product_attention=sdpa, rms_norm=torch.nn.functional.rms_norm)
eos = tok.eos_token_id
sets = {ds: read_jsonl(f'data/kv_arithmetic/{ds}.jsonl')[:N] for ds in ['kv_math_test', 'kv_math_held_in_test', 'num_math_test']}
def score(rows):
    ok = 0
    for r in rows:
        p = tok(r['prompt'])['input_ids']; t = tok(r['target'], add_special_tokens=False)['input_ids'] + [eos]
        ST['call'] = 0
        with torch.no_grad():
            logits = calm(input_ids=torch.tensor([p + t])).logits[0]
        ok += logits[len(p) - 1: len(p) + len(t) - 1].argmax(-1).tolist() == t
    return round(100 * ok / len(rows), 1)
heads = calm.config.num_heads if hasattr(calm.config, 'num_heads') and calm.config.num_heads else 4
for ko in [None] + [(c, h) for c in range(ST['nconn']) for h in range(4)]:
    ST['ko'] = ko
    print('knockout', ko, {ds: score(rows) for ds, rows in sets.items()}, flush=True)
