"""Where a Table 1 composition miscopies mA's values, teacher-forced.

Usage, in a directory after `dvc repro` (data/kv_arithmetic/, models/kv_arithmetic/):

    python experiments/table1/teacher_forced_errors.py [COMPOSITION_DIR] [N_ROWS]

COMPOSITION_DIR  a saved composition (default models/kv_arithmetic/calm)
N_ROWS           held-out KV-MATH rows (the first N_ROWS of kv_math_test; default 300)

Environment: MA the augmenting model compared with the composition (default models/kv_arithmetic/mA).

Feeds each row (prompt + gold target) to mA and to the composition, and at every position of the scratchpad's
substituted expression ("12+34") compares both models' greedy next token with the gold one. Prints a count per
(part of the expression, mA right?, composition right?), then where the composition's errors sit (which value,
which digit of it) and the tokens it wrote instead of a value's first digit. One thread.

docs/table1-calibration-log.md, fourth session: "Where the copy fails, teacher-forced" and "Teacher-forced errors
of the new default's seed-0 composition" (`teacher_forced_errors.py models/calm` in the layout of the time,
models/kv_arithmetic/calm now).
"""
import argparse
import collections
import os

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch
from transformers import AutoModelForCausalLM

from _shared import model_path, rows, world_tokenizer  # puts the repo on sys.path
from pipeline.composition import CALMForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("composition_dir", nargs="?", default=model_path("calm"), metavar="COMPOSITION_DIR")
    parser.add_argument("n_rows", nargs="?", type=int, default=300, metavar="N_ROWS")
    args = parser.parse_args()
    composition_dir, n_rows = args.composition_dir, args.n_rows

    torch.set_num_threads(1)
    tok = world_tokenizer()
    calm = CALMForCausalLM.from_pretrained(composition_dir).eval()
    mA = AutoModelForCausalLM.from_pretrained(os.environ.get("MA", model_path("mA"))).eval()
    test_rows = rows("kv_math_test")[:n_rows]

    agreement = collections.Counter()  # (part, mA right, composition right) -> positions
    error_place = collections.Counter()  # (value index, digit index within it) -> composition errors
    written_instead = collections.Counter()  # token the composition wrote where a value's first digit belonged
    for row in test_rows:
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

    print(f"{len(test_rows)} held-out KV-MATH rows, {composition_dir}")
    for key in sorted(agreement):
        print(" ", *key, agreement[key])
    print("composition errors by (value, digit):", dict(sorted(error_place.items())))
    print("written instead of a value's first digit:", dict(written_instead.most_common()))


if __name__ == "__main__":
    main()
