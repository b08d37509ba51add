"""mB alone on NUM-MATH: plain, behind a random prefix, and after a given scratchpad (KV-MATH teacher-forced).

Usage, in a directory after `dvc repro` (params.yaml, data/kv_arithmetic/, models/kv_arithmetic/):

    python experiments/table1/anchor_prefix_check.py [MB_DIR]

MB_DIR  the anchor to check (default models/kv_arithmetic/mB)

Prints one dict of exact-match accuracies (%), greedy, at most 6 new tokens, one thread:
  plain                  the first 200 rows of num_math_test
  random_prefix          the same rows behind a KV-MATH-shaped prefix over random strings ("qz+abcd=";
                         pipeline.worlds.kv_arithmetic.random_prefixes, seed 99): mB's inputs at the offsets
                         where they sit in a scratchpad answer
  kvmath_teacher_forced  the first 200 rows of kv_math_test with the scratchpad up to its last "=" given
                         ("vpbq+maegqi=99+75="): mB writes the value

docs/table1-calibration-log.md, second session: the mB tables of "mB's arithmetic after the scratchpad was
the first bottleneck" and "An anchor with sinusoidal absolute positions (XGLM) does both".
"""
import argparse

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch
from transformers import AutoModelForCausalLM

from _shared import exact_match, model_path, rows, world_data_params, world_tokenizer  # puts the repo on sys.path
from pipeline.worlds.kv_arithmetic import random_prefixes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mB_dir", nargs="?", default=model_path("mB"), metavar="MB_DIR")
    args = parser.parse_args()

    torch.set_num_threads(1)
    tok = world_tokenizer()
    mB = AutoModelForCausalLM.from_pretrained(args.mB_dir).eval()
    num_math = rows("num_math_test")[:200]
    prefixes = random_prefixes(world_data_params(), 200, 99)
    kv_math = rows("kv_math_test")[:200]
    teacher_forced = [  # the scratchpad up to its last "=" given, the value to write
        {"prompt": r["prompt"] + r["target"].rsplit("=", 1)[0] + "=", "target": r["target"].rsplit("=", 1)[1]}
        for r in kv_math
    ]
    sets = {
        "plain": num_math,
        "random_prefix": [dict(r, prompt=p + r["prompt"]) for r, p in zip(num_math, prefixes)],
        "kvmath_teacher_forced": teacher_forced,
    }
    accuracy, _ = exact_match(mB, tok, sets, max_new_tokens=6, batch_size=100)
    print(accuracy)


if __name__ == "__main__":
    main()
