"""The code world's test sets under `eval_sets: benchmarks`: HumanEval, MBPP and CodeXGLUE rows from the
benchmark files, the texts scored for bits per byte (`bits_per_byte`), and a D_C drawn from a benchmark's own
training split (`composition.source`)."""
from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.worlds.code.tasks import BENCHMARK_DEV_SETS, BENCHMARK_SETS, _rng


def benchmark_files(cfg: dict) -> list[Path]:
    """The benchmark files build() reads (checked against their SHA256SUMS when read): HumanEval, MBPP and the
    CodeXGLUE Ruby test split (excluded from training; the evaluation sets under eval_sets: benchmarks), the Ruby
    train split when there is one (the C2T exemplars then come from it), GSM8K train (English units)."""
    from pipeline.worlds.code.near_copies import benchmark_paths

    paths = list(benchmark_paths(cfg).values())
    ruby_train = Path(cfg["benchmarks_dir"]).expanduser() / "codexglue_code_to_text" / "ruby" / "train.jsonl"
    if cfg.get("eval_sets") == "benchmarks" and ruby_train.is_file():
        paths.append(ruby_train)
    if cfg["english"].get("gsm8k_train_questions", True):
        paths.append(Path(cfg["benchmarks_dir"]).expanduser() / "gsm8k" / "train.jsonl")
    return paths


def benchmark_sets(cfg: dict) -> dict[str, list[dict]]:
    """cc_test = HumanEval (0-shot), t2c_test = MBPP test (3-shot, [BEGIN]/[DONE]), c2t_test = CodeXGLUE Ruby
    test (3-shot): the items, prompts and tests of pipeline.benchmarks.tasks under conf/benchmark/<name>.yaml,
    read from the files benchmark_paths names (never the hub), the first `benchmark_limits[set]` items of each
    after the first `benchmark_offsets[set]` (default 0; e.g. a dev slice: HumanEval 41-80 beside a test subset of
    the first 40).
    Execution rows carry `program_prefix`: what precedes the completion in the program the sandbox runs (HumanEval:
    the prompt; MBPP: nothing, the completion is the whole program), and `test` (HumanEval: its check() and the
    call; MBPP: its test_list)."""
    from pipeline.benchmarks.config import load_benchmark_config
    from pipeline.benchmarks.errors import BenchmarkError
    from pipeline.benchmarks.tasks import build_task
    from pipeline.worlds.code.near_copies import benchmark_paths

    paths = benchmark_paths(cfg)
    local = {"humaneval": {"local_file": str(paths["humaneval"])}, "mbpp": {"local_dir": str(paths["mbpp"])},
             "codexglue": {"local_dir": str(paths["codexglue_ruby_test"].parent.parent)}}
    limits = cfg.get("benchmark_limits") or {}
    offsets = cfg.get("benchmark_offsets") or {}
    sentinel = "\x00completion\x00"
    out = {}
    slices = [(split, name, offsets.get(split, 0), limits.get(split)) for split, name in BENCHMARK_SETS.items()]
    for dev, n in (cfg.get("benchmark_dev") or {}).items():   # the items right after the test subset
        test = BENCHMARK_DEV_SETS[dev]
        slices.append((dev, BENCHMARK_SETS[test], offsets.get(test, 0) + limits[test], n))
    for split, name, skip, limit in slices:
        bcfg = load_benchmark_config(name)
        task = build_task({**bcfg, "data": {**local[name], "hub_id": None}})
        try:
            items = task.items(None if limit is None else skip + limit)[skip:]
        except BenchmarkError as e:
            raise PipelineError(f"code world: {split} from {name}: {e}") from None
        if not items:
            raise PipelineError(f"code world: {split} from {name}: benchmark_offsets {skip} leaves no item")
        rows = []
        for item in items:
            row = {"prompt": item.prompt, "task": split.split("_")[0], "group": name if name != "codexglue" else
                   bcfg["language"], "id": f"{name}:{item.id}" if name != "humaneval" else item.id}
            if name == "codexglue":
                row["target"] = item.reference
            else:
                prefix, test = task.program_and_tests(item, "")
                program, _ = task.program_and_tests(item, sentinel)
                if program != prefix + sentinel:  # the sandbox runs program_prefix + completion
                    raise PipelineError(f"code world: {name} item {item.id}: its program is not a prefix + the completion")
                row.update(target=item.reference, test=test, program_prefix=prefix)
                if item.extra.get("entry_point"):
                    row["entry_point"] = item.extra["entry_point"]
            rows.append(row)
        out[split] = rows
    return out


def bits_per_byte_sets(cfg: dict, real: dict[str, list[dict]], english_pool: dict[str, list[str]],
                       english_rows: list[dict]) -> dict[str, list[dict]]:
    """bits_per_byte: {code: true, prose: N} -> texts whose bits per byte a model is scored on (metric
    bits_per_byte; rows with an empty prompt: the whole text is scored):
      bpb_code_test   the reference solution of every test item: HumanEval's prompt + canonical solution (the
                      whole function), MBPP's reference code (the program its tests run), group = the benchmark
      bpb_prose_test  N GSM8K train questions (everyday English prose) that english_train does not hold, drawn
                      with eval_seed (held out of every training split: no model here trains on them)"""
    spec = cfg.get("bits_per_byte") or {}
    out = {}
    if spec.get("code"):
        rows = []
        for split in ("cc_test", "t2c_test"):
            for r in real[split]:
                text = r["program_prefix"] + r["target"]
                rows.append({"prompt": "", "target": text, "id": r["id"], "group": BENCHMARK_SETS[split],
                             "task": "bpb_code"})
        out["bpb_code_test"] = rows
    if spec.get("prose"):
        used = {r["target"] for r in english_rows}
        pool = [u for u in english_pool.get("gsm8k_train_questions", []) if u not in used]
        n = int(spec["prose"])
        if len(pool) < n:
            raise PipelineError(f"code world: bits_per_byte.prose asks for {n} held-out GSM8K questions, {len(pool)} "
                                f"are left (english.gsm8k_train_questions must be true)")
        picked = sorted(_rng(cfg["eval_seed"], "bpb_prose").choice(len(pool), size=n, replace=False))
        out["bpb_prose_test"] = [{"prompt": "", "target": pool[i], "id": f"gsm8k-train-question:{i}",
                                  "group": "english_prose", "task": "bpb_prose"} for i in picked]
    return out


# composition.source: where D_C comes from. code_train: the paper's D_C, task rows over a share of mA's code data
# (splits.build draws it); mbpp_train: MBPP's train split, the split its authors made for fine-tuning
COMPOSITION_SOURCES = ("code_train", "mbpp_train")


def mbpp_train_rows(cfg: dict) -> tuple[list[dict], list[str]]:
    """D_C = MBPP's train split (task_id 601-974) in the layout of the MBPP test prompts, 0-shot: the task, its tests
    and [BEGIN] -> the reference code and [DONE]. A row whose code near-copies an item the world evaluates
    (HumanEval, MBPP's prompt and test splits: `near_copy`'s code n-grams) is dropped. Returns (rows, the dropped
    rows' ids with the item each copies)."""
    from pipeline.benchmarks import data as benchmark_data
    from pipeline.benchmarks.code_tasks import _mbpp_prompt_block, _normalise_newlines
    from pipeline.worlds.code.near_copies import NearCopyIndex, benchmark_paths, code_tokens, load_benchmarks

    tasks = benchmark_data.load_mbpp(local_dir=str(benchmark_paths(cfg)["mbpp"]), hub_id=None)
    missing = [i for i in benchmark_data.MBPP_TRAIN_IDS if i not in tasks]
    if missing:
        raise PipelineError(f"code world: composition.source mbpp_train: MBPP's file lacks {len(missing)} train tasks "
                            f"(task_id {missing[0]}...); is it the full MBPP (974 tasks)?")
    def is_evaluated(name: str) -> bool:
        benchmark, _, key = name.partition(":")
        return benchmark == "humaneval" or benchmark == "mbpp" and (
            int(key) in benchmark_data.MBPP_TEST_IDS or int(key) in benchmark_data.MBPP_PROMPT_IDS)

    evaluated = NearCopyIndex(int(cfg["near_copy"]["code_ngram"]), float(cfg["near_copy"]["code_threshold"]))
    for name, text, language in load_benchmarks(cfg)["code"]:
        if is_evaluated(name):
            evaluated.add(name, code_tokens(text, language))
    rows, dropped = [], []
    for i in benchmark_data.MBPP_TRAIN_IDS:
        code = _normalise_newlines(tasks[i]["code"]).strip("\n")
        hit = evaluated.hit(code_tokens(code))
        if hit:
            dropped.append(f"mbpp-train/{i} ~ {hit}")
            continue
        rows.append({"prompt": _mbpp_prompt_block(tasks[i]), "target": code + "\n[DONE]", "task": "t2c",
                     "id": f"mbpp-train/{i}"})
    return rows, dropped
