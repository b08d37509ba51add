"""The code benchmarks: HumanEval and MBPP (pass@k, each completion run against its tests in the sandbox) and
CodeXGLUE code-to-text (chrF), their prompts, exemplars and scoring."""
from __future__ import annotations

import re

from pipeline.benchmarks import data as benchmark_data
from pipeline.benchmarks.errors import BenchmarkError, DataUnavailableError
from pipeline.benchmarks.extraction import truncate_at_stop
from pipeline.benchmarks.metrics import load_metric
from pipeline.benchmarks.task_base import EvalItem, Task, _exemplar_indices
from pipeline.sandbox.harness import limits_from_config, run_programs


# --- Code: HumanEval and MBPP ----------------------------------------------------------

_CODE_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?")


class _CodeTask(Task):
    def __init__(self, config):
        super().__init__(config)
        execution = config.get("execution") or {}
        self.workers = int(execution.get("workers", 2))
        self.limits = limits_from_config(execution.get("limits"))
        self.ks = [int(k) for k in config.get("pass_at_k", [1])]
        if max(self.ks) > self.n_samples:
            raise BenchmarkError(f"pass@{max(self.ks)} needs n_samples >= {max(self.ks)}, "
                                 f"got n_samples={self.n_samples}")

    def program_and_tests(self, item: EvalItem, completion: str) -> tuple[str, str]:
        raise NotImplementedError

    def score(self, items, completions, progress=True):
        jobs, owners = [], []
        for index, (item, samples) in enumerate(zip(items, completions)):
            for sample in samples:
                jobs.append(self.program_and_tests(item, self.postprocess(sample)))
                owners.append(index)
        results = run_programs(jobs, self.limits, workers=self.workers, progress=progress,
                               desc=f"{self.name}: running tests")
        passed: list[list[bool]] = [[] for _ in items]
        statuses: list[list[str]] = [[] for _ in items]
        errors: list[list[str]] = [[] for _ in items]
        for owner, result in zip(owners, results):
            passed[owner].append(result.passed)
            statuses[owner].append(result.status)
            lines = [line for line in result.output.splitlines() if line.strip()]
            errors[owner].append("" if result.passed or not lines else lines[-1][:300])
        metrics = {**load_metric("pass_at_k").compute(passed=passed, k=self.ks), "n": len(items),
                   "n_samples": self.n_samples,
                   "solved": int(sum(any(p) for p in passed))}
        records = [{"id": item.id, "completions": samples,
                    "programs": [self.postprocess(s) for s in samples],
                    "passed": p, "status": s, "error": e}
                   for item, samples, p, s, e in zip(items, completions, passed, statuses,
                                                     errors)]
        return metrics, records


class HumanEvalTask(_CodeTask):
    """0-shot HumanEval: the completion is appended to the prompt, then check(entry_point)."""

    name = "humaneval"
    default_stop = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")  # Chen et al. 2021

    def items(self, limit=None):
        problems = benchmark_data.load_humaneval(local_file=self.local, hub_id=self.hub_id)
        items = [EvalItem(id=p["task_id"], prompt=p["prompt"],
                          reference=p["canonical_solution"],
                          extra={"test": p["test"], "entry_point": p["entry_point"]})
                 for p in problems]
        return items[:limit] if limit else items

    def program_and_tests(self, item, completion):
        tests = f"{item.extra['test']}\n\ncheck({item.extra['entry_point']})\n"
        return item.prompt + completion, tests


MBPP_TASK_OPENING = "You are an expert Python programmer, and here is your task: "  # each task's prose line


def _mbpp_prompt_block(task: dict) -> str:
    tests = "\n".join(task["test_list"])
    return (f"{MBPP_TASK_OPENING}{task['text']} "
            f"Your code should pass these tests:\n\n{tests}\n[BEGIN]\n")


def _normalise_newlines(code: str) -> str:
    return code.replace("\r\n", "\n")


class MBPPTask(_CodeTask):
    """MBPP test split (task_id 11-510), 3-shot from the prompt split, tests in the prompt
    and code between [BEGIN] and [DONE] (Austin et al. 2021)."""

    name = "mbpp"
    default_stop = ("[DONE]",)

    def items(self, limit=None):
        tasks = benchmark_data.load_mbpp(local_dir=self.local, hub_id=self.hub_id)
        exemplar_ids = [int(i) for i in self.config["exemplar_task_ids"]]
        if not set(exemplar_ids) <= set(benchmark_data.MBPP_PROMPT_IDS):
            raise BenchmarkError(f"MBPP exemplars must come from the prompt split "
                                 f"(task_id 1-10), got {exemplar_ids}")
        missing = [i for i in [*exemplar_ids, *benchmark_data.MBPP_TEST_IDS] if i not in tasks]
        if missing:
            raise BenchmarkError(f"MBPP data lacks task ids {missing[:5]}...")
        context = "".join(f"{_mbpp_prompt_block(tasks[i])}"
                          f"{_normalise_newlines(tasks[i]['code']).strip()}\n[DONE]\n\n"
                          for i in exemplar_ids)
        items = [EvalItem(id=str(task_id), prompt=context + _mbpp_prompt_block(tasks[task_id]),
                          reference=_normalise_newlines(tasks[task_id]["code"]),
                          extra={"test_list": tasks[task_id]["test_list"],
                                 "test_setup_code": tasks[task_id].get("test_setup_code", "")})
                 for task_id in benchmark_data.MBPP_TEST_IDS]
        return items[:limit] if limit else items

    def postprocess(self, completion):
        code = truncate_at_stop(completion, self.stop)
        return _CODE_FENCE.sub("", code.replace("[BEGIN]", ""))  # chat models add fences

    def program_and_tests(self, item, completion):
        # The usual MBPP harnesses run code + test_list only; test_setup_code (non-empty
        # for task 367 alone in the test split) runs only when the config asks for it.
        setup = item.extra["test_setup_code"] if self.config.get("run_test_setup_code") else ""
        tests = "\n".join([_normalise_newlines(setup or ""), *item.extra["test_list"]])
        return _normalise_newlines(completion), tests + "\n"


# --- CodeXGLUE code-to-text ------------------------------------------------------------

def _one_line(text: str) -> str:
    return " ".join(text.split())


def _code_without_docstring(row: dict) -> str:
    code = row["code"]
    docstring = row.get("docstring") or ""
    if docstring and docstring in code:  # Python rows carry the docstring inside the code
        code = code.replace(docstring, "")
    return code


class CodeXGLUETask(Task):
    """Code-to-text: few-shot summary of a function, chrF against its docstring."""

    name = "codexglue"
    default_stop = ("\n",)

    def items(self, limit=None):
        config = self.config
        language = config["language"]
        test = benchmark_data.load_codexglue(language, "test", local_dir=self.local,
                                             hub_id=self.hub_id)
        n_shots, seed = int(config["n_shots"]), int(config["exemplar_seed"])
        excluded: set[int] = set()
        try:
            pool = benchmark_data.load_codexglue(language, "train", local_dir=self.local,
                                                 hub_id=self.hub_id)
            shots = [pool[i] for i in _exemplar_indices(len(pool), n_shots, seed)]
            self.exemplar_source = "train"
        except DataUnavailableError:  # only the test split here: exemplars left unscored
            indices = _exemplar_indices(len(test), n_shots, seed)
            shots, excluded = [test[i] for i in indices], set(indices)
            self.exemplar_source = "test rows excluded from scoring"
        max_chars = int(config["max_code_chars"])
        title = language.capitalize() if language != "php" else "PHP"
        header = f"Summarize each {title} function in one sentence.\n\n"
        context = "".join(f"Code:\n{_code_without_docstring(r)[:max_chars]}\n"
                          f"Summary: {_one_line(r['docstring'])}\n\n" for r in shots)
        items = [EvalItem(id=f"{language}-{index}", group=language,
                          reference=_one_line(row["docstring"]),
                          prompt=f"{header}{context}Code:\n"
                                 f"{_code_without_docstring(row)[:max_chars]}\nSummary:")
                 for index, row in enumerate(test) if index not in excluded]
        return items[:limit] if limit else items

    def postprocess(self, completion):
        return truncate_at_stop(completion, self.stop).strip()

    def score(self, items, completions):
        hypotheses = [self.postprocess(c[0]) for c in completions]
        metrics = {**load_metric("chrf").compute(predictions=hypotheses,
                                                 references=[item.reference for item in items]),
                   "n": len(items),
                   "exemplar_source": getattr(self, "exemplar_source", "")}
        records = [{"id": item.id, "prediction": h, "reference": item.reference}
                   for item, h in zip(items, hypotheses)]
        return metrics, records
