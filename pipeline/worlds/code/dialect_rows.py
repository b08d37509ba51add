"""The code world's rows in a dialect of Python (`data.dialect: {seed}`; the dialect itself:
pipeline/worlds/code_dialect.py): training rows renamed, evaluation rows shown in it with `rename_back`."""
from __future__ import annotations

from pipeline.benchmarks.tasks import MBPP_TASK_OPENING
from pipeline.errors import PipelineError
from pipeline.worlds.code_dialect import Dialect
from pipeline.worlds.code.tasks import c2t_prompt


def _dialect(cfg: dict) -> Dialect | None:
    spec = cfg.get("dialect")
    return None if spec is None else Dialect.from_config(spec)


def _c2t_code(prompt: str) -> str:
    """The code of a c2t_prompt()."""
    head, tail = "Code:\n", "\nSummary: "
    if not (prompt.startswith(head) and prompt.endswith(tail)) or len(prompt) < len(head) + len(tail):
        raise PipelineError(f"code world: not a C2T prompt: {prompt[:60]!r}")
    return prompt[len(head):-len(tail)]


def _training_row_in_dialect(row: dict, d: Dialect) -> dict:
    """A code training row with its code in the dialect: plain code rows and the cc, t2c and cc_stdlib task rows
    are code in prompt and target (a t2c prompt is comments, which stay as they are); a c2t row's code is in its
    prompt, and its target, the summary, is English."""
    if row.get("task") == "c2t":
        return {**row, "prompt": c2t_prompt(d.apply(_c2t_code(row["prompt"])))}
    return {**row, "prompt": d.apply(row["prompt"]), "target": d.apply(row["target"])}


def _evaluation_row_in_dialect(row: dict, d: Dialect) -> dict:
    """An evaluation row as a dialect model is asked it: its prompt (and reference) in the dialect. An execution
    row keeps the plain-Python prefix its program starts with (`program_prefix`) and gets `rename_back`, the
    inverse renaming pipeline.scoring.pass_at_k applies to each completion before it runs. CodeXGLUE's Ruby rows
    are not Python: unchanged."""
    if row["id"].startswith("codexglue:"):
        return row
    if row["task"] == "c2t":
        return {**row, "prompt": c2t_prompt(d.apply(_c2t_code(row["prompt"])))}
    prompt = _mbpp_prompt_in_dialect(row["prompt"], d) if row["id"].startswith("mbpp:") else d.apply(row["prompt"])
    return {**row, "prompt": prompt, "target": d.apply(row["target"]),
            "program_prefix": row.get("program_prefix", row["prompt"]), "rename_back": d.inverse}


def _mbpp_prompt_in_dialect(prompt: str, d: Dialect) -> str:
    """MBPP's 3-shot prompt holds prose lines (each task, in English), code lines (its asserts, the exemplars'
    code) and [BEGIN]/[DONE] markers. Only the code goes into the dialect: tokenized as Python, the prose's words
    would be renamed too ("find the ...")."""
    lines = [line + "\n" for line in prompt.split("\n")]
    lines[-1] = lines[-1][:-1]
    if sum(line.startswith(MBPP_TASK_OPENING) for line in lines) != prompt.count("[BEGIN]"):
        raise PipelineError("code world: an MBPP prompt's layout is not one prose line per task; "
                            "_mbpp_prompt_in_dialect needs updating")
    out, code = [], []
    for line in lines:
        if line.startswith(MBPP_TASK_OPENING) or line.strip() in ("[BEGIN]", "[DONE]"):
            out += [d.apply("".join(code)), line]
            code = []
        else:
            code.append(line)
    out.append(d.apply("".join(code)))
    return "".join(out)


def _files_in_dialect(files: dict[str, list[dict]], evaluation: set[str], d: Dialect) -> tuple[dict, dict]:
    """Every split with its Python in the dialect (english_train is prose: as it is), and the summary's record of
    it: the seed, the names, and the share of each split's rows and references the renaming changed (an MBPP
    prompt changes with its exemplars: its reference is the telling figure)."""
    def rename(name, rows):
        if name in evaluation:
            return [_evaluation_row_in_dialect(r, d) for r in rows]
        return rows if name == "english_train" else [_training_row_in_dialect(r, d) for r in rows]

    written = {name: rename(name, rows) for name, rows in files.items()}
    return written, {**d.describe(),
                     "rows_changed": {name: _changed(rows, written[name]) for name, rows in files.items()},
                     "targets_changed": {name: _changed(rows, written[name], ("target",))
                                         for name, rows in files.items()}}


def _changed(before: list[dict], after: list[dict], fields=("prompt", "target")) -> float:
    """The fraction of rows whose text (in any of `fields`) the dialect changed."""
    n = sum(any(a[f] != b[f] for f in fields) for a, b in zip(before, after))
    return round(n / max(len(before), 1), 4)
