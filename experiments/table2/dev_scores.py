"""Dev scores of trained language-world models (Table 2-3 calibration), through the evaluation stage's functions.

    CALM_THREADS=1 CALM_PARAMS=<params.yaml> python experiments/table2/dev_scores.py WORKDIR MODEL_DIR [MODEL_DIR ...]

WORKDIR holds what the stages built with those params (data/languages/, models/languages/tokenizer, and the bases
a composition names). Each model is scored on every `translation_dev` row (chrF1) and every `math_dev` row (GSM
accuracy, plainly and with the calculator: pipeline/scoring.py), and one line per model prints the mean over the
LRLs and over the HRLs (the world conf's `languages.hrl`, plus English for math). Dev rows only: held-out
English units and GSM8K *train* expressions, never FLORES or GSM8K test rows. docs/table2-calibration-log.md
(run 10 on) records its figures.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    import torch

    from pipeline.evaluate import evaluate_sets
    from pipeline.io import read_jsonl
    from pipeline.params import load_params
    from pipeline.scoring import get_metric
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model

    torch.set_num_threads(int(os.environ.get("CALM_THREADS", "1")))
    languages = load_params()["worlds"]["languages"]["data"]["languages"]
    hrl = {f"syn-{code}" for code in languages["hrl"]} | {"en"}
    os.chdir(argv[0])
    tokenizer = load_tokenizer("models/languages/tokenizer")
    rows = {"translation": read_jsonl("data/languages/translation_dev.jsonl"),
            "math": read_jsonl("data/languages/math_dev.jsonl")}
    conf = {"batch_size": 64, "max_new_tokens": 60,
            "sets": {"translation": {"metric": "chrf"}, "math": {"metric": "gsm_accuracy", "max_new_tokens": 16}}}
    for path in argv[1:]:
        model = load_trained_model(Path(path)).eval()
        metrics, records = evaluate_sets(model, tokenizer, rows, conf, progress=False)
        # the same completions graded with the calculator (no second decoding)
        math_outs = [[r["prediction"]] for r in records if r["set"] == "math"]
        metrics["math_calculator"], _ = get_metric("gsm_accuracy")(rows["math"], math_outs, {"calculator": True})
        line = []
        for name, m in metrics.items():
            groups = m["by_group"]
            lrl_scores = [v for g, v in groups.items() if g not in hrl]
            hrl_scores = [v for g, v in groups.items() if g in hrl]
            line.append(f"{name} LRL {sum(lrl_scores) / len(lrl_scores):.1f} / HRL {sum(hrl_scores) / len(hrl_scores):.1f}")
        print(f"{path}: " + "; ".join(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
