"""GSM8K / MGSM answer accuracy: the completion's final number against the gold number."""
import datasets
import evaluate

from pipeline.benchmarks.extraction import calculator_result, extract_number, numbers_match, parse_gold_number

_DESCRIPTION = """Whether the final number of each completion (pipeline/benchmarks/extraction.py: the number after
the last answer phrase, else the last number, read in the completion's language's number conventions) equals the
gold answer numerically. A gold answer is a number, or text as the datasets write it ("5,600", English style in every
language, or a float's repr as the synthetic worlds write it), parsed strictly.

`calculator=True`: a completion that opens with a calculation ("96 + 1 = ...") is graded on the calculator's value of
it, as GSM8K's calculator-annotated decoding would give: the model is graded on reading the problem (operands and
operation), not on doing the sum; other completions as without it."""

_CITATION = """@article{cobbe2021gsm8k,
  title = {Training Verifiers to Solve Math Word Problems}, author = {Cobbe, Karl and others},
  journal = {arXiv preprint arXiv:2110.14168}, year = {2021}}
@article{shi2022mgsm,
  title = {Language Models are Multilingual Chain-of-Thought Reasoners}, author = {Shi, Freda and others},
  journal = {arXiv preprint arXiv:2210.03057}, year = {2022}}"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of str, the completions.
    references: list of gold answers, all str ("5,600") or all numbers.
    language: None (English, default), one MGSM code for every completion (en bn de es fr ja ru sw te th zh), or a
        list with one code (or None) per completion.
    calculator: bool (default False): grade a completion that opens with a calculation on its value.
Returns:
    accuracy: the fraction of completions whose number equals the gold one, 0-1.
    correct: list of bool, one verdict per completion.
    extracted: list of float or None, the number each completion was graded on.
    calculated: (with calculator=True) list of float or None, each completion's opening calculation's value.
Examples:
    >>> gsm = evaluate.load("pipeline/benchmarks/metrics/gsm_accuracy")
    >>> gsm.compute(predictions=["so 1,234 in all. The answer is 1234.", "Die Antwort lautet 8."],
    ...             references=["1234", "7"], language=["en", "de"])["accuracy"]
    0.5
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class GsmAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # gold answers as the datasets write them, or already parsed
            features=[datasets.Features({"predictions": datasets.Value("string"),
                                         "references": datasets.Value("string")}),
                      datasets.Features({"predictions": datasets.Value("string"),
                                         "references": datasets.Value("float64")})],
            reference_urls=["https://github.com/openai/grade-school-math",
                            "https://github.com/google-research/url-nlp"],
        )

    def _compute(self, predictions, references, language=None, calculator=False):
        languages = language if isinstance(language, (list, tuple)) else [language] * len(predictions)
        if len(languages) != len(predictions):
            raise ValueError(f"gsm_accuracy: {len(languages)} languages for {len(predictions)} predictions")
        correct, extracted, calculated = [], [], []
        for completion, gold, lang in zip(predictions, references, languages):
            value = calculator_result(completion) if calculator else None
            calculated.append(value)
            if value is None:
                value = extract_number(completion, lang)
            extracted.append(value)
            correct.append(numbers_match(value, gold if isinstance(gold, float) else parse_gold_number(gold)))
        return {"accuracy": sum(correct) / len(correct) if correct else 0.0, "correct": correct, "extracted": extracted,
                **({"calculated": calculated} if calculator else {})}
