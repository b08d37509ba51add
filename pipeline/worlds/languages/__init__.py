"""World II: low-resource languages (paper §4.2, Tables 2-3, Figure 2), the data side.

The knowledge mB lacks and mA has is built: synthetic languages (synthetic_language.py), each a fixed, seeded,
reversible transform of real English, named `syn-<iso639-3 of its letter statistics' source>` (it is not that
language). Low-resource (LRL) languages appear only in mA's data, high-resource (HRL) ones only in mB's; English
("en") is an HRL for the math task. `build(cfg, out_dir, seed)` writes (JSONL, `group` = the row's language):
  english_train                                  English prose (GSM8K train questions, stdlib docstrings), plain text
  hrl_translation_train, hrl_math_train          mB's task rows ("<syn-xx> {sentence} = " -> English; "Q: ... A: ")
  lrl_monolingual_train, lrl_bitext_train        mA's data (the NTL analogue)
  composition_train                              D_C: `composition.fraction` (paper: ~5%) of mA's LRL rows
  translation_dev, math_dev                      held-out dev rows
  flores_lrl_test, flores_hrl_test               FLORES-200 devtest English rendered into each language (chrF)
  math_lrl_test, math_hrl_test                   one-step problems from GSM8K test calculator steps (accuracy)
No training unit is a FLORES devtest or GSM8K test sentence or a near copy of one, and no training problem has a
GSM8K test (a, op, b). Seeds: `language_seed` the languages, `eval_seed` the evaluation sets, `seed` the training
samples.

The formats, the English sources, the math task, the evaluation subsample and the measured sizes:
docs/world-languages.md.

One job a file: tasks.py (the splits each model trains on, metrics, prompt formats, the math problems),
sources.py (the benchmark files and the English units), synthetic_language.py (a synthetic language, rendering
English into it and back), language_building.py (building one from a real language's letter statistics,
resources/udhr_char_stats.json), language_set.py (the world's languages and characters), splits.py (`build`: the
splits and the summary) and reporting.py (`report_lines`).
"""
from __future__ import annotations

from pipeline.worlds.languages.language_set import language_table, make_languages, vocabulary
from pipeline.worlds.languages.reporting import report_lines
from pipeline.worlds.languages.sources import (benchmark_files, gsm_question_documents, gsm_question_sentences, ngrams,
                                               normalise, python_docstring_documents)
from pipeline.worlds.languages.splits import build
from pipeline.worlds.languages.tasks import (EVALUATION_METRICS, FORMAT_CHARS, MODEL_DATA, NAMES, OBJECTS, PRINTABLE,
                                             TEMPLATES, WORLD, all_annotation_expressions, math_answer, math_items,
                                             math_prompt, math_question, random_math_item, segments,
                                             translation_prompt)

__all__ = ["EVALUATION_METRICS", "FORMAT_CHARS", "MODEL_DATA", "NAMES", "OBJECTS", "PRINTABLE", "TEMPLATES", "WORLD",
           "all_annotation_expressions", "benchmark_files", "build", "gsm_question_documents", "gsm_question_sentences",
           "language_table", "make_languages", "math_answer", "math_items", "math_prompt", "math_question", "ngrams",
           "normalise", "python_docstring_documents", "random_math_item", "report_lines", "segments",
           "translation_prompt", "vocabulary"]
