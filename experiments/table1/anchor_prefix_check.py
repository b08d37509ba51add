"""mB alone on NUM-MATH plain, behind a random prefix, and after a given scratchpad (KV-MATH teacher-forced).

Run where data/ and models/ are: python scripts/calibration/anchor_prefix_check.py [models/mB]
"""
import sys, torch
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
from transformers import AutoModelForCausalLM
from pipeline.tokenizer import load_tokenizer
from pipeline.config import read_jsonl, load_params
from pipeline.worlds.kv_arithmetic import random_prefixes
from pipeline.evaluate import evaluate_model
torch.set_num_threads(1)
tok = load_tokenizer(); mB = AutoModelForCausalLM.from_pretrained(sys.argv[1] if len(sys.argv) > 1 else 'models/mB').eval()
nm = read_jsonl('data/kv_arithmetic/num_math_test.jsonl')[:200]
pre = random_prefixes(load_params()['worlds']['kv_arithmetic'], 200, 99)
km = read_jsonl('data/kv_arithmetic/kv_math_test.jsonl')[:200]
tf = [{'prompt': r['prompt'] + r['target'].rsplit('=', 1)[0] + '=', 'target': r['target'].rsplit('=', 1)[1]} for r in km]
sets = {'plain': nm, 'random_prefix': [dict(r, prompt=p + r['prompt']) for r, p in zip(nm, pre)], 'kvmath_teacher_forced': tf}
m, _ = evaluate_model(mB, tok, sets, max_new_tokens=6, batch_size=100, progress=False)
print({k: v['accuracy'] for k, v in m.items()})
