"""The six benchmarks: items (prompt + what scoring needs) and scoring of completions.

Each task is built from its config (conf/benchmark/<name>.yaml, as a plain dict) and
exposes `items()`, the generation settings (`stop`, `max_new_tokens`), and `score()`.
Exemplars for few-shot prompts never appear among the scored items.

Split by job: task_base.py (an item, the Task interface, subsampling and exemplar choice), flores_gsm_tasks.py
(FLORES-200, GSM8K, MGSM), code_tasks.py (HumanEval, MBPP, CodeXGLUE); this module names them (`TASKS`) and
builds one from its config.
"""
from __future__ import annotations

from pathlib import Path

from pipeline.benchmarks.code_tasks import CodeXGLUETask, HumanEvalTask, MBPPTask
from pipeline.benchmarks.code_tasks import MBPP_TASK_OPENING, _CodeTask  # noqa: F401 (imported from here)
from pipeline.benchmarks.errors import BenchmarkError
from pipeline.benchmarks.flores_gsm_tasks import FloresTask, GSM8KTask, MGSMTask
from pipeline.benchmarks.task_base import EvalItem  # noqa: F401 (imported from here)
from pipeline.benchmarks.task_base import Task


TASKS = {task.name: task for task in
         (FloresTask, GSM8KTask, MGSMTask, HumanEvalTask, MBPPTask, CodeXGLUETask)}


def build_task(config: dict) -> Task:
    name = config.get("name")
    if name not in TASKS:
        raise BenchmarkError(f"unknown benchmark {name!r}; known: {sorted(TASKS)}")
    return TASKS[name](config)


def resolve_local_path(config: dict, data_root: str | Path | None) -> dict:
    """Fill data.local_dir from a shared data root and the benchmark's `subdir`, if unset."""
    data = dict(config.get("data") or {})
    if data_root and not (data.get("local_dir") or data.get("local_file")) and \
            data.get("subdir"):
        data["local_dir"] = str(Path(data_root) / data["subdir"])
    resolved = {**config, "data": data}
    gsm8k = dict(config.get("gsm8k_data") or {})
    if data_root and gsm8k and not gsm8k.get("local_dir") and gsm8k.get("subdir"):
        gsm8k["local_dir"] = str(Path(data_root) / gsm8k["subdir"])
        resolved["gsm8k_data"] = gsm8k
    return resolved
