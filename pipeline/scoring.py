"""Metrics of a world's evaluation sets, by name (`worlds.<world>.evaluation.sets.<set>.metric`).

Each scorer takes the set's rows ({prompt, target, ...}), one list of completions per row (one completion
unless the set samples n > 1) and the set's conf, and returns (summary, one record per row). The summary's
`score` is the figure a report shows (percent, or chrF points); other keys are extras. Rows with a `group`
field (e.g. a language) also get per-group scores. The scorers run the project's `evaluate` modules
(pipeline/benchmarks/metrics: exact match, sacrebleu chrF, GSM answer accuracy, and the unbiased pass@k over the
sandbox's verdicts); the records hold their per-row verdicts, and a percentage is taken of those verdicts (two
decimals).
"""
from __future__ import annotations

import math
from collections import defaultdict

from pipeline.benchmarks.metrics import load_metric
from pipeline.errors import PipelineError


def _by_group(rows, values, reduce):
    groups = defaultdict(list)
    for r, v in zip(rows, values):
        if "group" in r:
            groups[r["group"]].append(v)
    return {g: reduce(vs) for g, vs in sorted(groups.items())}


def _percent(flags) -> float:
    # of the verdicts, not 100 x a module's fraction: the two round differently at some halves (23 of 160: 14.375)
    return round(100.0 * sum(flags) / max(len(flags), 1), 2)


def exact_match(rows, completions, scfg):
    """Correct when the completion (cut at the first `cut_at`, if set) equals the target, whitespace stripped.
    `cut_at`: e.g. KV-SUBS shares its prompt with a scratchpad KV-MATH, whose answer goes on after the
    substituted expression with "=" and the value."""
    result = load_metric("exact_match").compute(predictions=[outs[0] for outs in completions],
                                                references=[r["target"] for r in rows], cut_at=scfg.get("cut_at"))
    flags = result["correct"]
    records = [{"prediction": outs[0].strip(), "graded": graded, "correct": ok}
               for outs, graded, ok in zip(completions, result["graded"], flags)]
    summary = {"score": _percent(flags)}
    if any("group" in r for r in rows):
        summary["by_group"] = _by_group(rows, flags, _percent)
    return summary, records


def chrf(rows, completions, scfg):
    """Corpus chrF (sacrebleu): `score` is chrF1 (the paper's), `chrf2` sacrebleu's default beta=2."""
    metric = load_metric("chrf")
    hyps = [outs[0].strip() for outs in completions]
    refs = [r["target"].strip() for r in rows]
    overall = metric.compute(predictions=hyps, references=refs)
    summary = {"score": round(overall["chrf1"], 2), "chrf2": round(overall["chrf2"], 2)}
    if any("group" in r for r in rows):
        pairs = list(zip(hyps, refs))
        summary["by_group"] = _by_group(rows, pairs, lambda ps: round(
            metric.compute(predictions=[h for h, _ in ps], references=[r for _, r in ps])["chrf1"], 2))
    return summary, [{"prediction": h} for h in hyps]


def gsm_accuracy(rows, completions, scfg):
    """The final number of the completion (pipeline/benchmarks/extraction.py) equals the gold number: the row's
    `reference` when it has one (a target that shows its working, "30 + 30 = 60", keeps the answer there), else
    its target.
    A row with a `language` field (an MGSM code: en bn de es fr ja ru sw te th zh) is read in that language's
    number conventions; other rows (the synthetic worlds write numbers as English does) in English's.
    `calculator: true`: a completion that opens with a calculation ("96 + 1 = ...") is graded on the calculator's
    value of it, as GSM8K's calculator-annotated decoding would give (extraction.calculator_result): the model is
    graded on reading the problem (operands and operation), not on doing the sum; other completions as above."""
    use_calculator = bool(scfg.get("calculator", False))
    result = load_metric("gsm_accuracy").compute(
        predictions=[outs[0] for outs in completions], references=[str(r.get("reference", r["target"])) for r in rows],
        language=[r.get("language") for r in rows], calculator=use_calculator)
    flags = result["correct"]
    records = [{"prediction": outs[0], "extracted": value, "correct": ok}
               for outs, value, ok in zip(completions, result["extracted"], flags)]
    if use_calculator:
        for record, calculated in zip(records, result["calculated"]):
            record["calculated"] = calculated
    summary = {"score": _percent(flags)}
    if any("group" in r for r in rows):
        summary["by_group"] = _by_group(rows, flags, _percent)
    return summary, records


def pass_at_k(rows, completions, scfg):
    """Each completion appended to the row's `program_prefix` (if the row has one: e.g. "" for MBPP, whose program
    is the completion alone) or else to its prompt (HumanEval-style), then the row's `test` source, run in the
    sandbox; `score` is pass@1 in percent (unbiased estimator over n samples), `ks` adds pass@k.

    A row with a `rename_back` field ({name in the completion: name to run}) has each completion's identifiers
    renamed with it first (pipeline.worlds.code_dialect.rename_identifiers: NAME tokens only, strings and comments
    untouched): code written in a renamed dialect of Python is renamed back to Python before it runs (such a row's
    `program_prefix` is the plain-Python prefix). Its record then also lists the programs' completions as run
    (`restored`). Rows without the field are run as written."""
    from pipeline.sandbox.harness import limits_from_config, run_programs
    from pipeline.worlds.code_dialect import rename_identifiers

    if any("test" not in r for r in rows):
        raise PipelineError("metric pass_at_k needs a `test` field on every row")
    if any(not isinstance(r.get("program_prefix", ""), str) for r in rows):
        raise PipelineError("metric pass_at_k: a row's `program_prefix` must be a string (\"\" = the completion alone)")
    if any(not _is_name_map(r.get("rename_back", {})) for r in rows):
        raise PipelineError("metric pass_at_k: a row's `rename_back` must map names (strings) to names")
    jobs, owners, restored = [], [], [[] for _ in rows]
    for i, (r, outs) in enumerate(zip(rows, completions)):
        for o in outs:
            if "rename_back" in r:
                o = rename_identifiers(o, r["rename_back"])
                restored[i].append(o)
            jobs.append(((r["program_prefix"] if "program_prefix" in r else r["prompt"]) + o, r["test"]))
            owners.append(i)
    results = run_programs(jobs, limits_from_config(scfg.get("limits")), workers=int(scfg.get("workers", 2)),
                           progress=False)
    passed = [[] for _ in rows]
    for owner, result in zip(owners, results):
        passed[owner].append(bool(result.passed))
    metric = load_metric("pass_at_k")
    figures = metric.compute(passed=passed, k=[int(k) for k in scfg.get("ks", [1])])
    summary = {"score": round(100.0 * figures.get("pass@1", 0.0), 2),
               **{k: round(100.0 * v, 2) for k, v in figures.items()}}
    if any("group" in r for r in rows):
        summary["by_group"] = _by_group(rows, passed,
                                        lambda ps: round(100.0 * metric.compute(passed=ps, k=[1])["pass@1"], 2))
    records = [{"completions": outs, "passed": p} | ({"restored": rs} if "rename_back" in r else {})
               for r, outs, p, rs in zip(rows, completions, passed, restored)]
    return summary, records


def _is_name_map(value) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def text_bits(model, tokenizer, text: str, context_token: str | list[str] | None = None) -> tuple[float, int]:
    """(-log2 p(text), number of tokens scored) under `model` reading `text` in `tokenizer`'s own tokens, each token
    conditioned on the ones before it and on one context token in front: `context_token` (a token string of the
    tokenizer, e.g. a document separator) or else the tokenizer's BOS, else its EOS. Every token of the text is
    scored, none of the context: dividing by the text's UTF-8 bytes gives bits per byte, comparable across
    tokenizers (a composition is scored in its anchor's tokens). A list of token strings: the first that is a token
    of the tokenizer (models of different tokenizers, each after its own document start)."""
    import torch

    if isinstance(context_token, (list, tuple)):
        have = [t for t in context_token if tokenizer.convert_ids_to_tokens(tokenizer.convert_tokens_to_ids(t)) == t]
        if not have:
            raise PipelineError(f"metric bits_per_byte: none of the context_tokens {list(context_token)} is a token of "
                                f"the model's tokenizer ({getattr(tokenizer, 'name_or_path', '') or type(tokenizer).__name__})")
        context_token = have[0]
    if context_token is not None:
        start = tokenizer.convert_tokens_to_ids(context_token)
        # an unknown token maps to the unknown-token id, whose string is another (SmolLM2's unk is <|endoftext|> itself)
        if start is None or tokenizer.convert_ids_to_tokens(start) != context_token:
            raise PipelineError(f"metric bits_per_byte: context_token {context_token!r} is not a token of the model's "
                                f"tokenizer ({getattr(tokenizer, 'name_or_path', '') or type(tokenizer).__name__})")
    else:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if start is None:
            raise PipelineError("metric bits_per_byte: the tokenizer has neither a BOS nor an EOS token to condition "
                                "the first token on; set the set's context_token")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise PipelineError("metric bits_per_byte: an empty text has no bytes to score")
    input_ids = torch.tensor([[int(start)] + list(ids)])
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(input_ids=input_ids.to(device)).logits[0, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(1, input_ids[0, 1:, None].to(device))[:, 0]
    return float(-logp.sum().item() / math.log(2)), len(ids)


def bits_per_byte(model, tokenizer, rows, scfg):
    """Bits per UTF-8 byte of each row's text (prompt + target: a row with an empty prompt is a whole text), under
    the model's own tokenizer (text_bits); `score` is the set's total bits over its total bytes (so long texts weigh
    by their length), `by_group` the same per group; each record has the row's bits and bytes. No generation: the
    model reads each text once, one row at a time (texts differ widely in length; no padding to mask)."""
    records, per_group = [], defaultdict(lambda: [0.0, 0])
    total_bits, total_bytes = 0.0, 0
    for r in rows:
        text = r["prompt"] + r["target"]
        bits, n_tokens = text_bits(model, tokenizer, text, scfg.get("context_token"))
        n_bytes = len(text.encode("utf-8"))
        total_bits += bits
        total_bytes += n_bytes
        if "group" in r:
            per_group[r["group"]][0] += bits
            per_group[r["group"]][1] += n_bytes
        records.append({"bits": round(bits, 4), "bytes": n_bytes, "tokens": n_tokens,
                        "bits_per_byte": round(bits / n_bytes, 4)})
    summary = {"score": round(total_bits / max(total_bytes, 1), 4), "bytes": total_bytes}
    if per_group:
        summary["by_group"] = {g: round(b / max(n, 1), 4) for g, (b, n) in sorted(per_group.items())}
    return summary, records


METRICS = {"exact_match": exact_match, "chrf": chrf, "gsm_accuracy": gsm_accuracy, "pass_at_k": pass_at_k,
           "bits_per_byte": bits_per_byte}
# metrics that score the model's probabilities of the rows' text (called with the model and its tokenizer), not
# generated completions
LIKELIHOOD_METRICS = frozenset({"bits_per_byte"})


def get_metric(name: str):
    if name not in METRICS:
        raise PipelineError(f"unknown metric {name!r}: one of {', '.join(METRICS)}")
    return METRICS[name]
