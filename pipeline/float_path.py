"""The CPU float path every stage computes on, pinned before torch loads so that figures do not depend on the CPU.

The same recipe gives different bytes on different x86-64 CPUs because ATen, MKL and oneDNN each pick the widest
vector kernels the CPU has, and a wider kernel sums in another order. On a composition that sits near a decision
edge that is not rounding noise: Table 1's CALM held-out score was 67.0 on an AVX2 machine and 35.3 on an AVX-512
one, same commit (issue 29). Pinning each library's kernels before torch loads takes the CPU's choice away
(`speed/bench_float_path.py` measures what each path costs; docs/reproducibility.md what each was seen to hold).

    CALM_FLOAT_PATH=avx2      the default, what the published figures use: ATen, MKL and oneDNN on AVX2 kernels.
                              Same bytes on the AVX2 machine that published and on an AMD EPYC with AVX-512, but
                              not on an Intel Xeon with AVX-512 and AMX: MKL's AVX2 path still differs by vendor
                              (matrix products, and its vector exp), so the models differ in the 6th digit
    CALM_FLOAT_PATH=portable  ATen and oneDNN on AVX2, MKL on its vendor-neutral path (MKL_CBWR=COMPATIBLE): the
                              same bytes on both of those CPUs, op by op and through a whole training chain
    CALM_FLOAT_PATH=native    each library picks for this CPU (faster on AVX-512, figures may differ)
    CALM_FLOAT_PATH=scalar    ATen's non-vectorized kernels, MKL's compatible path, oneDNN at SSE4.1 (slow): a
                              third summation order, to check that a recipe does not depend on the float path

A variable the user exported wins over the path's value for it, and the path is then recorded as `custom`. The
intra-op thread count also changes summation order in MKL; it is part of the runtime (`runtime.threads`,
CALM_THREADS) and recorded beside the path in every model's train_info.json.

This module must not import torch: pipeline/__init__.py calls `pin()` first thing, and the three libraries read
their variables when torch loads them (ATen on its first dispatch, MKL and oneDNN on their first call).
"""
from __future__ import annotations

import os
import platform
import sys

ENV = "CALM_FLOAT_PATH"
DEFAULT = "avx2"
PATHS = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "portable": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "native": {},
    "scalar": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}
VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")

_state: dict = {}


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _has_avx2() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    flags = _cpu_flags()
    # no /proc/cpuinfo (macOS, Windows): an x86-64 CPU of the last decade has both; ATen checks again itself
    return not flags or {"avx2", "fma"} <= flags


def pin() -> str:
    """Export the chosen path's variables (those the user did not set) and return the path's name. Idempotent."""
    if _state:
        return _state["path"]
    requested = os.environ.get(ENV, DEFAULT).strip().lower() or DEFAULT
    if requested not in PATHS:
        # this runs at import time, before any stage's error handling: one line and out
        sys.stderr.write(f"error: {ENV}={requested!r} is not a float path (one of {', '.join(PATHS)})\n")
        raise SystemExit(2)
    path = requested
    if path in ("avx2", "portable") and not _has_avx2():
        path = "native"  # a CPU without AVX2 (or not x86-64) cannot take that path; recorded as what it is
    wanted = PATHS[path]
    user_set = {k for k in VARIABLES if k in os.environ and os.environ[k] != wanted.get(k)}
    torch_loaded = "torch" in sys.modules
    for k, v in wanted.items():
        os.environ.setdefault(k, v)
    if user_set:
        path = "custom"
    _state.update(path=path, requested=requested, torch_loaded_first=torch_loaded)
    return path


def describe() -> dict:
    """What the float path of this process is, for train_info.json and run records."""
    path = pin()
    record = {"float_path": path if not _state["torch_loaded_first"] else f"{path} (torch loaded before pipeline)"}
    if path == "custom":
        record["float_env"] = {k: os.environ.get(k) for k in VARIABLES}
    try:
        import torch

        record["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        record["threads"] = torch.get_num_threads()
    except Exception:  # noqa: BLE001  (a record field, never a reason to fail a stage)
        pass
    return record
