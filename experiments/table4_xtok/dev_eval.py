"""A cross-tokenizer world's model on the world's DEV slices, or on any of its sets, graded as the stages grade the
test sets: what choices (steps, connections, learning rate, D_C) may be made on, never the test items. code_xtok's
are HumanEval and MBPP items right after the test subsets (`benchmark_dev`: cc_dev, t2c_dev); languages_xtok's is
FLORES devtest lines 900-999 (flores_dev, graded as flores_test: chrF per language). code_xtok's bpb_code_dev is the
dev slices' reference solutions, scored as bpb_code_test scores the test items' (bits per byte of HumanEval's prompt +
canonical solution, of MBPP's reference code): derived here from cc_dev and t2c_dev, as the world derives
bpb_code_test from its test sets (pipeline/worlds/code/real_benchmarks.py). `set:N` takes the first N rows;
`set:N/group` the first N of each group (language). Writes reports/<world>/dev/<model>.json (scores, per-item
verdicts, seconds) and its predictions beside it.

    python experiments/table4_xtok/dev_eval.py [--world W] [--generation K=V,...] <model> [set[:N[/group]] ...]
    e.g.  python experiments/table4_xtok/dev_eval.py calm cc_dev:16 bpb_prose_test
          CALM_PARAMS=real/params.yaml python experiments/table4_xtok/dev_eval.py --world languages_xtok calm flores_dev:5/group

`--generation repetition_penalty=1.2` sets fields of the model's generation_config (transformers' names; numbers
as numbers) for every generated set, a decoding to try on the dev slice; the files are then named
`<model>+repetition_penalty=1.2.json`, so they never replace the model's plain ones.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: pins the float path)

DEV_CONF = {"cc_dev": "cc_test", "t2c_dev": "t2c_test", "flores_dev": "flores_test",   # graded as its test set
            "bpb_code_dev": "bpb_code_test"}
DERIVED = {"bpb_code_dev": ("cc_dev", "t2c_dev")}   # a dev set made of other dev sets' rows (reference_texts)
DEFAULT_SETS = {"code_xtok": ["cc_dev", "t2c_dev"], "languages_xtok": ["flores_dev"]}


def first_rows(rows: list[dict], spec: str) -> list[dict]:
    """`N`: the first N rows; `N/group`: the first N rows of each group, in file order."""
    n, _, per = spec.partition("/")
    if not per:
        return rows[:int(n)]
    seen: dict[str, int] = {}
    kept = []
    for r in rows:
        seen[r[per]] = seen.get(r[per], 0) + 1
        if seen[r[per]] <= int(n):
            kept.append(r)
    return kept


def reference_texts(rows: list[dict]) -> list[dict]:
    """Each code item's reference program as one text to score whole (an empty prompt), as bpb_code_test's rows."""
    return [{"prompt": "", "target": r["program_prefix"] + r["target"], "id": r["id"], "group": r["group"],
             "task": "bpb_code"} for r in rows]


def parse_generation(spec: str) -> dict:
    """`K=V,K=V` -> {K: V}, each value read as JSON where it is one (1.2, true, null), else kept as text."""
    fields = {}
    for item in filter(None, spec.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"dev_eval: --generation {item!r} is not KEY=VALUE")
        try:
            fields[key] = json.loads(value)
        except json.JSONDecodeError:
            fields[key] = value
    return fields


def main(argv: list[str]) -> None:
    from pipeline.evaluate import evaluate_sets, evaluation_model
    from pipeline.io import atomic_write_json, atomic_write_jsonl, read_jsonl
    from pipeline.params import load_params
    from pipeline.training.trainer import set_threads

    world, generation = "code_xtok", {}
    while argv[:1] in (["--world"], ["--generation"]) and len(argv) > 1:
        if argv[0] == "--world":
            world = argv[1]
        else:
            generation = parse_generation(argv[1])
        argv = argv[2:]
    if not argv or world not in DEFAULT_SETS:
        raise SystemExit(__doc__)
    name, wanted = argv[0], argv[1:] or DEFAULT_SETS[world]
    params = load_params()
    set_threads(params.get("runtime") or {})
    ecfg = dict(params["worlds"][world]["evaluation"])
    sets, confs = {}, {}
    for spec in wanted:
        s, _, n = spec.partition(":")
        graded_as = DEV_CONF.get(s, s)
        paths = [Path("data") / world / f"{p}.jsonl" for p in DERIVED.get(s, (s,))]
        built = all(p.is_file() for p in paths)
        if graded_as not in ecfg["sets"] or not built or (n and not n.partition("/")[0].isdigit()):
            raise SystemExit(f"dev_eval: {spec!r} is not <set>[:N[/group]] of a set {world} evaluates or a dev slice "
                             f"of one ({', '.join(sorted(ecfg['sets']))}; dev: {', '.join(DEV_CONF)}), with "
                             f"{', '.join(map(str, paths))} built")
        rows = [r for p in paths for r in read_jsonl(p)]
        rows = reference_texts(rows) if s in DERIVED else rows
        sets[s] = first_rows(rows, n) if n else rows
        conf = ecfg["sets"][graded_as]
        confs[s] = dict(conf, per_item=True) if conf["metric"] == "pass_at_k" else conf
    ecfg["sets"] = confs
    t0 = time.time()
    model, tokenizer = evaluation_model(params, world, name)
    for key, value in generation.items():
        if not hasattr(model.generation_config, key):
            raise SystemExit(f"dev_eval: --generation {key}: not a field of transformers' GenerationConfig")
        setattr(model.generation_config, key, value)
    load_s = time.time() - t0
    metrics, records = evaluate_sets(model, tokenizer, sets, ecfg)
    out = Path("reports") / world / "dev"
    stem = name + "".join(f"+{k}={v}" for k, v in generation.items())
    atomic_write_json(out / f"{stem}.json", {"model": name, "generation": generation, "load_seconds": round(load_s, 1),
                                             "metrics": metrics})
    atomic_write_jsonl(out / f"{stem}.predictions.jsonl", records)
    print(json.dumps({s: {k: m[k] for k in ("score", "n", "seconds")} for s, m in metrics.items()}), "load", round(load_s, 1))


if __name__ == "__main__":
    main(sys.argv[1:])
