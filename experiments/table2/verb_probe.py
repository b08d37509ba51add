"""Does a language-world model know the words a math question's operation hangs on? (Table 3 diagnosis)

    CALM_THREADS=1 CALM_PARAMS=<params.yaml> python experiments/table2/verb_probe.py WORKDIR MODEL_DIR [MODEL_DIR ...]

A one-step word problem names its operation with a verb of its template ("sold" for -, "bought" for +:
pipeline/worlds/languages/tasks.py, TEMPLATES). For every LRL `math_dev` row (held-out GSM8K *train* expressions, never
test rows) this takes the question's 4-word segment that holds that verb, renders it in the row's language, asks
each model to translate it (the world's translation prompt, greedy, through the evaluation stage's functions) and
counts the completions that contain the verb. One line per model: the share over near and over far languages, and
how often the verbs occur on the English side of mA's bitext and of D_C (per LRL) -- what mA could have learnt
them from. Where the evaluation stage scored the model (WORKDIR/reports/languages/metrics/<model>.json), a second
line gives its LRL math accuracy on the test set (as graded there) averaged by kind and script of language.
docs/table2-calibration-log.md (section 14) records its figures.
"""
from __future__ import annotations

import collections
import difflib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def operation_verbs() -> list[str]:
    """The words that tell each "+" template from its "-" twin ("bought" / "sold", "puts in" / "takes out")."""
    from pipeline.worlds.languages import TEMPLATES

    verbs = []
    for plus, minus in zip(TEMPLATES["+"], TEMPLATES["-"]):
        a, b = plus.split(), minus.split()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
            if tag != "equal":
                verbs += [" ".join(a[i1:i2]), " ".join(b[j1:j2])]
    return verbs


VERBS = operation_verbs()


def _verb(text: str) -> str | None:
    return next((v for v in VERBS if re.search(rf"\b{v}\b", text)), None)


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    import torch

    from pipeline.evaluate import evaluate_sets
    from pipeline.io import read_jsonl
    from pipeline.params import load_params
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model
    from pipeline.worlds import languages as world
    from pipeline.worlds.languages import synthetic_language as syn

    torch.set_num_threads(int(os.environ.get("CALM_THREADS", "1")))
    cfg = load_params()["worlds"]["languages"]["data"]
    os.chdir(argv[0])
    langs = world.make_languages(cfg)
    rows = []
    for r in read_jsonl("data/languages/math_dev.jsonl"):
        lang = langs.get(r["group"])
        if lang is None or lang.resource != "lrl":
            continue
        head, tail = world.math_prompt(r["group"], "\0").split("\0")
        question = syn.unrender(r["prompt"][len(head):-len(tail)], lang)
        for seg in world.segments(question, cfg["segment_words"]):
            verb = _verb(seg)
            if verb:
                rows.append({"prompt": world.translation_prompt(r["group"], syn.render(seg, lang)), "target": seg,
                             "reference": seg, "group": r["group"], "verb": verb, "kind": lang.kind})
    n_lrl = sum(1 for l in langs.values() if l.resource == "lrl")
    for split in ("lrl_bitext_train", "composition_train"):
        counts = collections.Counter(_verb(r["target"]) for r in read_jsonl(f"data/languages/{split}.jsonl"))
        counts.pop(None, None)
        print(f"{split}: verb occurrences per LRL " + ", ".join(f"{v} {counts[v] / n_lrl:.2f}" for v in VERBS))
    tokenizer = load_tokenizer("models/languages/tokenizer")
    conf = {"batch_size": 64, "max_new_tokens": 48, "sets": {"verbs": {"metric": "chrf"}}}
    for path in argv[1:]:
        model = load_trained_model(Path(path)).eval()
        _, records = evaluate_sets(model, tokenizer, {"verbs": rows}, conf, progress=False)
        hits = collections.defaultdict(lambda: [0, 0])
        for row, rec in zip(rows, records):
            hits[row["kind"]][0] += bool(re.search(rf"\b{row['verb']}\b", rec["prediction"]))
            hits[row["kind"]][1] += 1
        print(f"{path}: verb translated in " + ", ".join(f"{k} {100 * a / b:.0f}% of {b}" for k, (a, b) in
                                                         sorted(hits.items())), flush=True)
        metrics = Path("reports/languages/metrics") / f"{Path(path).name}.json"
        if metrics.is_file():
            by_kind = collections.defaultdict(list)
            for code, score in json.loads(metrics.read_text())["metrics"]["math_lrl_test"]["by_group"].items():
                by_kind[f"{langs[code].kind} {langs[code].script}"].append(score)
            print(f"{path}: math_lrl_test accuracy by kind " + ", ".join(
                f"{k} {sum(v) / len(v):.1f} ({len(v)} LRLs)" for k, v in sorted(by_kind.items())), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
