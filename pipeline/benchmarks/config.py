"""Benchmark configs: conf/benchmark/<name>.yaml, read with OmegaConf, as plain dicts."""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from pipeline.benchmarks.errors import BenchmarkError

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCHMARK_CONFIG_DIR = REPO_ROOT / "conf" / "benchmark"


def available_benchmarks() -> list[str]:
    return sorted(path.stem for path in BENCHMARK_CONFIG_DIR.glob("*.yaml"))


def load_benchmark_config(name: str, overrides: list[str] = ()) -> dict:
    """The benchmark's yaml with dotlist overrides (e.g. ["n_shots=3"]) applied."""
    path = BENCHMARK_CONFIG_DIR / f"{name}.yaml"
    if not path.is_file():
        raise BenchmarkError(f"unknown benchmark {name!r}; known: {available_benchmarks()}")
    config = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(list(overrides)))
    return OmegaConf.to_container(config, resolve=True)
