"""The six benchmarks: items (prompt + what scoring needs) and scoring of completions.

Each task is built from its config (conf/benchmark/<name>.yaml, as a plain dict) and
exposes `items()`, the generation settings (`stop`, `max_new_tokens`), and `score()`.
Exemplars for few-shot prompts never appear among the scored items.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.benchmarks import data as benchmark_data
from pipeline.benchmarks.errors import BenchmarkError, DataUnavailableError
from pipeline.benchmarks.extraction import parse_gold_number, truncate_at_stop
from pipeline.benchmarks.metrics import load_metric
from pipeline.sandbox.harness import limits_from_config, run_programs

FLORES_LANGUAGE_NAMES = {
    "eng_Latn": "English", "pol_Latn": "Polish", "swh_Latn": "Swahili", "yor_Latn": "Yoruba",
    "hau_Latn": "Hausa", "lij_Latn": "Ligurian", "mar_Deva": "Marathi",
    "taq_Latn": "Tamasheq", "taq_Tfng": "Tamasheq", "nno_Latn": "Norwegian Nynorsk",
    "sun_Latn": "Sundanese", "ban_Latn": "Balinese", "tha_Thai": "Thai",
    "min_Latn": "Minangkabau", "acm_Arab": "Mesopotamian Arabic",
}


@dataclass
class EvalItem:
    id: str
    prompt: str
    reference: Any  # what a perfect answer is scored against (text, number, solution)
    group: str = ""  # language, for benchmarks reported per language
    extra: dict = field(default_factory=dict)  # scoring inputs (e.g. unit tests)


class Task:
    """A benchmark: its items and how completions are scored."""

    name = ""
    default_stop: tuple[str, ...] = ()

    def __init__(self, config: dict):
        self.config = config
        self.stop = list(config.get("stop", self.default_stop))
        self.max_new_tokens = int(config.get("max_new_tokens", 256))
        self.n_samples = int(config.get("n_samples", 1))
        data = config.get("data") or {}
        self.local = data.get("local_dir") or data.get("local_file")
        self.hub_id = data.get("hub_id")

    def items(self, limit: int | None = None) -> list[EvalItem]:
        raise NotImplementedError

    def postprocess(self, completion: str) -> str:
        return truncate_at_stop(completion, self.stop)

    def score(self, items: list[EvalItem], completions: list[list[str]]
              ) -> tuple[dict, list[dict]]:
        """Metrics, and one record per item (saved as the predictions JSONL)."""
        raise NotImplementedError


def _limit_per_group(items: list[EvalItem], limit: int | None) -> list[EvalItem]:
    """The first `limit` items of each group (language), keeping order."""
    if limit is None:
        return items
    if limit < 1:
        raise BenchmarkError(f"limit must be a positive number of items, got {limit}")
    counts: dict[str, int] = {}
    kept = []
    for item in items:
        counts[item.group] = counts.get(item.group, 0) + 1
        if counts[item.group] <= limit:
            kept.append(item)
    return kept


def _exemplar_indices(n_rows: int, n_shots: int, seed: int) -> list[int]:
    if not 0 <= n_shots < n_rows:
        raise BenchmarkError(f"n_shots={n_shots} must be between 0 and {n_rows - 1}")
    return random.Random(seed).sample(range(n_rows), n_shots)


# --- FLORES-200 ------------------------------------------------------------------------

class FloresTask(Task):
    """XX->English translation, few-shot, corpus chrF (beta=1 and beta=2).

    Only devtest is available, so the exemplars are devtest lines (fixed by a seed) that
    are then excluded from scoring, for every language alike.
    """

    name = "flores"
    default_stop = ("\n",)

    def items(self, limit=None):
        config = self.config
        target = config["target_language"]
        split = config.get("split", "devtest")
        references = benchmark_data.load_flores(target, local_dir=self.local,
                                                hub_id=self.hub_id, split=split)
        target_name = FLORES_LANGUAGE_NAMES.get(target, target)
        items = []
        for language in config["source_languages"]:
            sources = benchmark_data.load_flores(language, local_dir=self.local,
                                                 hub_id=self.hub_id, split=split)
            if len(sources) != len(references):
                raise BenchmarkError(f"FLORES {language} has {len(sources)} lines but "
                                     f"{target} has {len(references)}: not line-aligned")
            name = FLORES_LANGUAGE_NAMES.get(language, language)
            shots = _exemplar_indices(len(sources), int(config["n_shots"]),
                                      int(config["exemplar_seed"]))
            header = f"Translate the following sentences from {name} to {target_name}.\n\n"
            context = "".join(f"{name}: {sources[i]}\n{target_name}: {references[i]}\n\n"
                              for i in shots)
            excluded = set(shots)
            for index, sentence in enumerate(sources):
                if index not in excluded:
                    items.append(EvalItem(
                        id=f"{language}-{index}", group=language, reference=references[index],
                        prompt=f"{header}{context}{name}: {sentence}\n{target_name}:"))
        return _limit_per_group(items, limit)

    def postprocess(self, completion):
        return truncate_at_stop(completion, self.stop).strip()

    def score(self, items, completions):
        hypotheses = [self.postprocess(c[0]) for c in completions]
        chrf = load_metric("chrf")
        metrics: dict[str, Any] = {"per_language": {}}
        for language in dict.fromkeys(item.group for item in items):
            rows = [i for i, item in enumerate(items) if item.group == language]
            scores = chrf.compute(predictions=[hypotheses[i] for i in rows],
                                  references=[items[i].reference for i in rows])
            metrics["per_language"][language] = {**scores, "n": len(rows)}
        for key in ("chrf1", "chrf2"):
            metrics[f"mean_{key}"] = float(np.mean(
                [m[key] for m in metrics["per_language"].values()]))
        records = [{"id": item.id, "language": item.group, "prediction": hypothesis,
                    "reference": item.reference}
                   for item, hypothesis in zip(items, hypotheses)]
        return metrics, records


# --- GSM8K and MGSM --------------------------------------------------------------------

_CALCULATOR_ANNOTATION = re.compile(r"<<[^>]*>>")


def _chain_of_thought(solution: str, answer: str) -> str:
    """A GSM8K solution as a completion: annotations removed, final answer stated.

    Blank lines are dropped: a few solutions have them, and a blank line ends a completion.
    """
    lines = [line.strip() for line in _CALCULATOR_ANNOTATION.sub("", solution).splitlines()]
    return "\n".join(line for line in lines if line) + f" The answer is {answer}."


def _math_prompt(exemplars: list[tuple[str, str]], question: str) -> str:
    context = "".join(f"Question: {q}\nAnswer: {a}\n\n" for q, a in exemplars)
    return f"{context}Question: {question}\nAnswer:"


class _MathTask(Task):
    default_stop = ("\n\n", "Question:")

    def score(self, items, completions):
        # Each item is read in its own language's number conventions (GSM8K items are "en").
        result = load_metric("gsm_accuracy").compute(
            predictions=[self.postprocess(c[0]) for c in completions],
            references=[item.reference for item in items], language=[item.group or None for item in items])
        predictions, correct = result["extracted"], result["correct"]
        metrics: dict[str, Any] = {"accuracy": result["accuracy"], "n": len(items)}
        groups = list(dict.fromkeys(item.group for item in items))
        if len(groups) > 1:
            metrics["per_language"] = {
                g: {"accuracy": float(np.mean([c for c, it in zip(correct, items)
                                               if it.group == g])),
                    "n": sum(it.group == g for it in items)} for g in groups}
            metrics["mean_accuracy"] = float(np.mean(
                [m["accuracy"] for m in metrics["per_language"].values()]))
        records = [{"id": item.id, "language": item.group, "completion": c[0],
                    "extracted": p, "gold": item.reference, "correct": ok}
                   for item, c, p, ok in zip(items, completions, predictions, correct)]
        return metrics, records


class GSM8KTask(_MathTask):
    """GSM8K test accuracy; chain-of-thought exemplars drawn from GSM8K train."""

    name = "gsm8k"

    def items(self, limit=None):
        train = benchmark_data.load_gsm8k("train", local_dir=self.local, hub_id=self.hub_id)
        test = benchmark_data.load_gsm8k("test", local_dir=self.local, hub_id=self.hub_id)
        shots = _exemplar_indices(len(train), int(self.config["n_shots"]),
                                  int(self.config["exemplar_seed"]))
        exemplars = [(train[i]["question"],
                      _chain_of_thought(train[i]["solution"], train[i]["answer"]))
                     for i in shots]
        items = [EvalItem(id=f"gsm8k-{index}", group="en", prompt=_math_prompt(
                     exemplars, row["question"]), reference=parse_gold_number(row["answer"]),
                          extra={"gold_completion": _chain_of_thought(row["solution"],
                                                                      row["answer"])})
                 for index, row in enumerate(test)]
        return _limit_per_group(items, limit)


class MGSMTask(_MathTask):
    """MGSM accuracy per language; exemplars are MGSM rows excluded from scoring.

    MGSM is GSM8K test[:250] translated (line-aligned), so with exemplar_cot=gsm8k_test the
    exemplars show the native question with the English chain of thought of the aligned
    GSM8K row ("native exemplars + English CoT", Shi et al. 2022); with exemplar_cot=none
    they show only "The answer is N.".
    """

    name = "mgsm"

    def items(self, limit=None):
        config = self.config
        cot_source = config.get("exemplar_cot", "gsm8k_test")
        if cot_source not in {"gsm8k_test", "none"}:
            raise BenchmarkError(f"exemplar_cot must be gsm8k_test or none, got {cot_source!r}")
        per_language = {language: benchmark_data.load_mgsm(language, local_dir=self.local,
                                                           hub_id=self.hub_id)
                        for language in config["languages"]}
        chains = None
        if cot_source == "gsm8k_test":
            gsm8k = config.get("gsm8k_data") or {}
            chains = benchmark_data.load_gsm8k("test", local_dir=gsm8k.get("local_dir"),
                                               hub_id=gsm8k.get("hub_id"),
                                               local_key="benchmark.gsm8k_data.local_dir")
        items = []
        for language, rows in per_language.items():
            if chains is not None and len(chains) < len(rows):
                raise BenchmarkError("GSM8K test is shorter than MGSM: not the aligned data")
            shots = _exemplar_indices(len(rows), int(config["n_shots"]),
                                      int(config["exemplar_seed"]))
            exemplars = []
            for i in shots:
                if chains is not None:
                    answer = _chain_of_thought(chains[i]["solution"], rows[i]["answer"])
                else:
                    answer = f"The answer is {rows[i]['answer']}."
                exemplars.append((rows[i]["question"], answer))
            excluded = set(shots)
            items += [EvalItem(id=f"mgsm-{language}-{index}", group=language,
                               prompt=_math_prompt(exemplars, row["question"]),
                               reference=parse_gold_number(row["answer"]),
                               extra={"gold_completion": f"The answer is {row['answer']}."})
                      for index, row in enumerate(rows) if index not in excluded]
        return _limit_per_group(items, limit)


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
