"""The code world's lines under its report tables (`report_lines`)."""
from __future__ import annotations

from pipeline.worlds.code.tasks import BENCHMARK_DEV_SETS, BENCHMARK_TITLES


def report_lines(cfg: dict, summary: dict, world_cfg: dict | None = None) -> list[str]:
    """Lines under the world's report tables: what the CPU tasks are (and the dialect, when the code is in one)."""
    return _task_lines(summary) + _dev_and_bpb_lines(summary) + _dialect_lines(summary)


def _dev_and_bpb_lines(summary: dict) -> list[str]:
    """The benchmark dev slices and the bits-per-byte texts, where the world has them (else nothing: other
    worlds' reports stay as they were)."""
    lines = []
    dev = {s: b for s, b in (summary.get("benchmark_sets") or {}).items() if s in BENCHMARK_DEV_SETS}
    if dev:
        lines.append("Dev slices (for choices; no test item tunes anything): " + "; ".join(
            f"{s} = {BENCHMARK_TITLES[b['benchmark']]} items {b.get('offset', 0) + 1}-{b.get('offset', 0) + b['rows']}"
            for s, b in dev.items()) + ".")
    bpb = summary.get("bits_per_byte_sets") or {}
    if bpb:
        what = {"bpb_code_test": "the test items' reference solutions (HumanEval: prompt + canonical solution; MBPP: "
                                 "its reference code)",
                "bpb_prose_test": "GSM8K train questions held out of every training split (English prose)"}
        lines.append("Bits per byte (lower is better; tokenizer-independent: -log2 p of a text's tokens under the model's "
                     "own tokenizer, each conditioned on the tokens before it and one context token, over the text's "
                     "UTF-8 bytes; a composition in its anchor's tokens): " + "; ".join(
                         f"{s} = {what.get(s, s)}, {b['rows']} texts, {b['bytes']:,} bytes" for s, b in bpb.items()) + ".")
    return lines


def _dialect_lines(summary: dict) -> list[str]:
    if "dialect" not in summary:
        return []
    d = summary["dialect"]
    # the share of each test set's prompts and references the renaming changes (an MBPP prompt changes with its
    # exemplars, so its reference is the telling figure)
    changed = ", ".join(f"{s} {d['rows_changed'][s]:.0%}" + (f" (references {d['targets_changed'][s]:.0%})"
                                                             if d["targets_changed"][s] else "")
                        for s in summary["files"] if s.endswith("_test"))
    return [f"Code in a dialect (seed {d['seed']}): {d['builtins_renamed']} builtins and {d['methods_renamed']} "
            f"method names permuted among themselves (pipeline/worlds/code_dialect.py). The code training splits "
            f"are written in it, the evaluation prompts shown in it (rows it changes: {changed}), and generated "
            f"code is renamed back before it runs."]


def _task_lines(summary: dict) -> list[str]:
    f = summary["files"]
    if summary.get("eval_sets") == "benchmarks":
        b = summary["benchmark_sets"]
        def cut(s):
            off, limit = b[s].get("offset", 0), b[s].get("limit")
            if off:
                return f" (items {off + 1}-{off + b[s]['rows']})"
            return f" (first {limit})" if limit else ""
        return [
            f"Code world, real benchmarks (eval_sets: benchmarks): CC = HumanEval, {b['cc_test']['rows']} problems"
            f"{cut('cc_test')}, 0-shot; T2C = MBPP test, {b['t2c_test']['rows']} tasks{cut('t2c_test')}, 3-shot; "
            f"C2T = CodeXGLUE code-to-text Ruby test, {b['c2t_test']['rows']} functions{cut('c2t_test')}, 3-shot "
            f"(the paper's column is Python; only the Ruby copy is here); pass@1 in the sandbox, chrF1. Rows named "
            f"'ours: synthesized' / 'held-out stdlib' hold these benchmarks under this setting; CC-stdlib stays the "
            f"held-out stdlib diagnostic.",
            _composition_line(summary, "the code data"),
        ]
    return [
        f"Code world (CPU preset): CC = {f['cc_test']['rows']} synthesized functions, HumanEval format, held out by "
        f"structure; CC-stdlib = {f['cc_stdlib_test']['rows']} held-out stdlib functions, last statement, tests "
        f"from captured behaviour; T2C = {f['t2c_test']['rows']} synthesized MBPP-like tasks; C2T = "
        f"{f['c2t_test']['rows']} held-out stdlib functions -> first docstring sentence (chrF1).",
        _composition_line(summary, "mA's code data"),
    ]


def _composition_line(summary: dict, of: str) -> str:
    """What D_C holds: its share of the code data, as task rows (the four formats) and/or plain code."""
    c = summary["composition"]
    if c.get("source") == "mbpp_train":
        return (f"D_C = MBPP's train split (task_id 601-974, the split its authors made for fine-tuning), "
                f"{c['tasks'].get('t2c', 0)} tasks in the MBPP test prompts' layout, 0-shot (task, tests, [BEGIN] -> "
                f"reference code, [DONE]); {len(c['near_copies_dropped'])} dropped as near copies of an evaluated "
                f"item. A benchmark's training split, not code no benchmark holds: no test or dev item is among them.")
    tasks = c.get("tasks", {})
    plain = tasks.get("code", 0)
    formats = {t: n for t, n in tasks.items() if t != "code"}
    parts = ([f"task rows ({', '.join(f'{t} {n}' for t, n in formats.items())})"] if formats else []) \
        + ([f"{plain} functions of plain code"] if plain else [])
    return f"D_C = {c['fraction_of_code_train']:.1%} of {of} (characters), as " + " and ".join(parts) + "."
