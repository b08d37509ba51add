"""The natural-language benchmarks: FLORES-200 translation (chrF) and GSM8K / MGSM math (the final number), their
prompts, exemplars and scoring."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from pipeline.benchmarks import data as benchmark_data
from pipeline.benchmarks.errors import BenchmarkError
from pipeline.benchmarks.extraction import parse_gold_number, truncate_at_stop
from pipeline.benchmarks.metrics import load_metric
from pipeline.benchmarks.task_base import EvalItem, Task, _exemplar_indices, _limit_per_group


FLORES_LANGUAGE_NAMES = {
    "eng_Latn": "English", "pol_Latn": "Polish", "swh_Latn": "Swahili", "yor_Latn": "Yoruba",
    "hau_Latn": "Hausa", "lij_Latn": "Ligurian", "mar_Deva": "Marathi",
    "taq_Latn": "Tamasheq", "taq_Tfng": "Tamasheq", "nno_Latn": "Norwegian Nynorsk",
    "sun_Latn": "Sundanese", "ban_Latn": "Balinese", "tha_Thai": "Thai",
    "min_Latn": "Minangkabau", "acm_Arab": "Mesopotamian Arabic",
}


# --- FLORES-200 ------------------------------------------------------------------------

def flores_prompt(source_name: str, target_name: str, exemplars: list[tuple[str, str]], sentence: str) -> str:
    """The few-shot translation prompt: an instruction line, each exemplar as a "<source name>: ..." line and a
    "<target name>: ..." line followed by a blank line, then the sentence and "<target name>:" for the model to
    complete (its answer ends at the first newline)."""
    header = f"Translate the following sentences from {source_name} to {target_name}.\n\n"
    context = "".join(f"{source_name}: {source}\n{target_name}: {target}\n\n" for source, target in exemplars)
    return f"{header}{context}{source_name}: {sentence}\n{target_name}:"


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
            exemplars = [(sources[i], references[i]) for i in shots]
            excluded = set(shots)
            for index, sentence in enumerate(sources):
                if index not in excluded:
                    items.append(EvalItem(
                        id=f"{language}-{index}", group=language, reference=references[index],
                        prompt=flores_prompt(name, target_name, exemplars, sentence)))
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
