"""World III: code (paper §4.3, Table 4), the data side.

`build(cfg, out_dir, seed)` writes the code world's splits (JSONL rows {prompt, target, ...}; an empty prompt is
plain text, loss on every token) from this interpreter's standard library (corpus.py), synthesized functions
(synthesis.py), GSM8K *train* questions and the stdlib's docstring prose:
  english_train, code_train, mb_code_train   plain text: the vanilla checkpoint's and mB's English, mA's code,
                                             "a little code" for mB
  format_train                               rows of each task format (cc, t2c, cc_stdlib, c2t), for mA and mB
  composition_train                          D_C: `composition.fraction` (paper: 7%) of code_train, as task rows
  cc_*, t2c_*, cc_stdlib_*, c2t_* test/dev   CPU stand-ins for HumanEval, MBPP (pass_at_k, the rows carry `test`
                                             and `entry_point`) and CodeXGLUE (chrf)
`eval_sets: benchmarks` replaces the test sets with the real benchmarks (pipeline/benchmarks/tasks.py,
`benchmark_sets` below); `dialect: {seed: k}` writes every Python text in a renamed dialect (pipeline/worlds/code_dialect.py;
execution rows carry `rename_back`). No benchmark item and no held-out function is in any training split (near
copies too: near_copies.NearCopyIndex; summary `exclusion` counts what each check removed). Characters: printable
ASCII and newline (`vocabulary`). `eval_seed` fixes the evaluation rows, `seed` draws the training samples: same cfg
and seed, same bytes on the same Python version (summary.json records it and a hash of the files read).

One job a file: tasks.py (the splits each model trains on, metrics, prompt formats, characters), corpus.py (the
stdlib's functions and docstring prose), near_copies.py (the benchmark files and the near-copy checks),
synthesis.py and synthesis_families.py (synthesized functions and their tests), capture.py (tests of stdlib
functions from their captured behaviour), evaluation.py (the seed-independent evaluation side and the training
pools it leaves), real_benchmarks.py (`eval_sets: benchmarks`, bits per byte), training_rows.py, dialect_rows.py,
splits.py (`build`: the splits and the summary) and reporting.py (`report_lines`). The dialect itself,
pipeline/worlds/code_dialect.py, sits outside the package: scoring renames completions back with it without
importing the world.

What each split and task holds, how each departs from the paper, and what was measured on the data:
docs/world-code.md.
"""
from __future__ import annotations

from pipeline.worlds.code.real_benchmarks import benchmark_files, benchmark_sets, bits_per_byte_sets
from pipeline.worlds.code.reporting import report_lines
from pipeline.worlds.code.splits import build
from pipeline.worlds.code.tasks import (BENCHMARK_DEV_SETS, BENCHMARK_SETS, BENCHMARK_TITLES, COMPOSITION_TASKS,
                                        EVAL_SET_MODES, EVALUATION_METRICS, MODEL_DATA, TASKS, WORLD, WRONG_BODY,
                                        c2t_prompt, cc_prompt, t2c_prompt, vocabulary)
from pipeline.worlds.code.training_rows import humaneval_layout

__all__ = ["BENCHMARK_DEV_SETS", "BENCHMARK_SETS", "BENCHMARK_TITLES", "COMPOSITION_TASKS", "EVAL_SET_MODES",
           "EVALUATION_METRICS", "MODEL_DATA", "TASKS", "WORLD", "WRONG_BODY", "benchmark_files", "benchmark_sets",
           "bits_per_byte_sets", "build", "c2t_prompt", "cc_prompt", "humaneval_layout", "report_lines",
           "t2c_prompt", "vocabulary"]
