"""Per head, which mA position each mB position attends to, on teacher-forced test rows, with the
predictions of CALM, mA and mB. Run where data/ and models/ are:
python scripts/calibration/attention_readout.py SAVED_COMPOSITION_DIR [DATASET]
"""
import sys, torch, json
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
import pipeline.composition.modeling_calm as mc
from pipeline.composition import CALMForCausalLM
from pipeline.tokenizer import load_tokenizer
from pipeline.config import read_jsonl
from transformers import AutoModelForCausalLM
torch.set_num_threads(1)
tok = load_tokenizer()
calm = CALMForCausalLM.from_pretrained(sys.argv[1]).eval()
mA = AutoModelForCausalLM.from_pretrained('models/mA').eval(); mB = AutoModelForCausalLM.from_pretrained('models/mB').eval()
cap = []
orig = mc.F.scaled_dot_product_attention
def sdpa(q, k, v, attn_mask=None, **kw):
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    s = s.masked_fill(~attn_mask, float('-inf')) if attn_mask is not None else s
    cap.append(torch.softmax(s, -1))
    return orig(q, k, v, attn_mask=attn_mask, **kw)
import types
mc.F = types.SimpleNamespace(scaled_dot_product_attention=sdpa, rms_norm=torch.nn.functional.rms_norm)
held = {r['key'] for r in read_jsonl('data/kv_arithmetic/d_kv.jsonl') if r['held_in']}
ds = sys.argv[2] if len(sys.argv) > 2 else 'kv_math_test'
rows = read_jsonl(f'data/kv_arithmetic/{ds}.jsonl')[:6]
for r in rows:
    ids = tok(r['prompt'] + r['target'])['input_ids']
    x = torch.tensor([ids])
    cap.clear()
    with torch.no_grad():
        lc = calm(input_ids=x).logits[0].argmax(-1); la = mA(input_ids=x).logits[0].argmax(-1); lb = mB(input_ids=x).logits[0].argmax(-1)
    att = cap[0][0]  # [H, T, S]
    toks = tok.convert_ids_to_tokens(ids)
    n_p = len(tok(r['prompt'])['input_ids'])
    print(r['prompt'], r['target'])
    for t in range(n_p - 1, len(ids) - 1):
        a = att[:, t]  # [H, S]
        tops = [(int(a[h].argmax()) - t, round(float(a[h].max()), 2)) for h in range(a.shape[0])]
        print(f"  pos {t} cur {toks[t]!r} next {toks[t+1]!r}  calm {tok.convert_ids_to_tokens(int(lc[t]))!r} mA {tok.convert_ids_to_tokens(int(la[t]))!r} mB {tok.convert_ids_to_tokens(int(lb[t]))!r}  att(rel,w)/head {tops}")
