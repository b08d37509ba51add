"""The CPU float path is pinned before torch loads, in every process the pipeline starts (pipeline/float_path.py).

Published figures are reproducible to the digit only on the pinned path: a process that loads torch before
`pipeline` computes on whatever kernels its CPU has, and its figures may move (Table 1: 67.0 vs 35.3)."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import float_path

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import pipeline, torch, json, os; from pipeline import float_path; "
         "print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(), "
         "'record': float_path.describe(), 'mkl': os.environ.get('MKL_CBWR')}))")


def _probe(**env) -> dict:
    import json

    clean = {k: v for k, v in os.environ.items() if k not in (*float_path.VARIABLES, float_path.ENV)}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(not float_path._has_avx2(), reason="this CPU has no AVX2: the default path falls back to native")
def test_importing_pipeline_pins_atens_kernels_before_torch_loads():
    default, portable, scalar = _probe(), _probe(CALM_FLOAT_PATH="portable"), _probe(CALM_FLOAT_PATH="scalar")
    assert default["capability"] == "AVX2" and default["mkl"] == "AVX2"
    assert default["record"]["float_path"] == "avx2"
    assert portable["capability"] == "AVX2" and portable["mkl"] == "COMPATIBLE"
    assert portable["record"]["float_path"] == "portable"
    # the same probe on another path dispatches to other kernels: the variables reach ATen, not just os.environ
    assert scalar["capability"] == "DEFAULT" and scalar["record"]["float_path"] == "scalar"


def test_a_variable_the_user_exported_wins_and_is_recorded_as_custom():
    record = _probe(CALM_FLOAT_PATH="avx2", ATEN_CPU_CAPABILITY="default")
    assert record["capability"] == "DEFAULT"
    assert record["record"]["float_path"] == "custom"
    assert record["record"]["float_env"]["ATEN_CPU_CAPABILITY"] == "default"


def test_an_unknown_float_path_is_one_line():
    out = subprocess.run([sys.executable, "-c", "import pipeline"], env={**os.environ, "CALM_FLOAT_PATH": "avx9"},
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: CALM_FLOAT_PATH='avx9' is not a float path (one of avx2, portable, native, scalar)"]


def _first_import(tree: ast.Module, names: tuple[str, ...]) -> int | None:
    for node in tree.body:
        mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(m.split(".")[0] in names for m in mods):
            return node.lineno
    return None


# tests/ need no check: conftest.py imports pipeline before any test module loads torch
SCRIPTS = sorted(p for d in ("speed", "experiments", "scripts") for p in (ROOT / d).rglob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_script_imports_pipeline_before_torch(script):
    """A script that measures or trains loads torch only after `pipeline` has pinned the float path."""
    tree = ast.parse(script.read_text())
    torch_line = _first_import(tree, ("torch", "transformers", "peft", "accelerate", "datasets"))
    if torch_line is None:
        return
    pipeline_line = _first_import(tree, ("pipeline", "_shared"))
    assert pipeline_line is not None and pipeline_line < torch_line, (
        f"{script.relative_to(ROOT)}:{torch_line} imports torch before pipeline (the float path would not be pinned)")
