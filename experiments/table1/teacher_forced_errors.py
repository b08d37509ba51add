"""Where a Table 1 composition miscopies mA's values, teacher-forced (docs/table1-calibration-log.md).

Run from a directory after `dvc repro` (data/kv_arithmetic/, models/{mA,calm}/):
    python scripts/calibration/teacher_forced_errors.py [COMPOSITION_DIR] [N_ROWS]

Feeds each held-out KV-MATH row (prompt + gold target) to mA and to the composition, and at every position of
the scratchpad's substituted expression ("12+34") compares both models' greedy next token with the gold one.
Prints a count per (part of the expression, mA right?, composition right?), then where the composition's errors
sit (which value, which digit of it) and the tokens it wrote instead.
"""
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import torch
from transformers import AutoModelForCausalLM

from pipeline.composition import CALMForCausalLM
from pipeline.config import read_jsonl
from pipeline.tokenizer import load_tokenizer

torch.set_num_threads(1)
composition_dir = sys.argv[1] if len(sys.argv) > 1 else "models/calm"
n_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 300
tok = load_tokenizer()
calm = CALMForCausalLM.from_pretrained(composition_dir).eval()
mA = AutoModelForCausalLM.from_pretrained("models/mA").eval()
rows = read_jsonl("data/kv_arithmetic/kv_math_test.jsonl")[:n_rows]

agreement = collections.Counter()  # (part, mA right, composition right) -> positions
error_place = collections.Counter()  # (value index, digit index within it) -> composition errors
written_instead = collections.Counter()  # token the composition wrote where a value's first digit belonged
for row in rows:
    substituted = row["target"].rsplit("=", 1)[0]
    prompt_ids = tok.encode(row["prompt"])
    ids = tok.encode(row["prompt"] + row["target"])
    with torch.no_grad():
        composed = calm(input_ids=torch.tensor([ids])).logits[0].argmax(-1)
        augmenting = mA(input_ids=torch.tensor([ids])).logits[0].argmax(-1)
    start = len(prompt_ids)
    for i in range(start - 1, start + len(substituted) - 1):  # logits at i predict token i + 1
        gold = ids[i + 1]
        written = tok.decode(ids[start : i + 1])
        value_index, digit_index = written.count("+"), len(written.split("+")[-1])
        part = "+" if tok.decode([gold]) == "+" else f"value {value_index + 1}"
        a_ok, c_ok = augmenting[i].item() == gold, composed[i].item() == gold
        agreement[(part, "mA right" if a_ok else "mA wrong", "CALM right" if c_ok else "CALM wrong")] += 1
        if not c_ok:
            error_place[(value_index + 1, digit_index + 1)] += 1
            if digit_index == 0 and part != "+":
                written_instead[tok.decode([composed[i].item()])] += 1

print(f"{len(rows)} held-out KV-MATH rows, {composition_dir}")
for key in sorted(agreement):
    print(" ", *key, agreement[key])
print("composition errors by (value, digit):", dict(sorted(error_place.items())))
print("written instead of a value's first digit:", dict(written_instead.most_common()))
