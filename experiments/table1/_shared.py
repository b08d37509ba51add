"""What the Table 1 calibration scripts share: where the kv_arithmetic world's outputs live after `dvc repro`,
exact-match evaluation as the scripts have always graded it, and a hook on the composition's cross-attention.

Not a script. The scripts import it by name (their own directory is on sys.path when Python runs them), and
importing it puts the repository root on sys.path, so `pipeline` is found without PYTHONPATH.
"""
from __future__ import annotations

import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import torch  # noqa: E402

from pipeline.evaluate import evaluate_sets  # noqa: E402
from pipeline.io import read_jsonl  # noqa: E402
from pipeline.params import load_params  # noqa: E402
from pipeline.tokenization import load_tokenizer  # noqa: E402

WORLD = "kv_arithmetic"
DATA_DIR = Path("data") / WORLD  # relative: the scripts run in a directory after `dvc repro`
MODELS_DIR = Path("models") / WORLD


def model_path(name: str) -> str:
    """models/kv_arithmetic/<name> (mA, mB, calm, vanilla, tokenizer)."""
    return str(MODELS_DIR / name)


def rows(stem: str) -> list[dict]:
    """data/kv_arithmetic/<stem>.jsonl."""
    return read_jsonl(DATA_DIR / f"{stem}.jsonl")


def world_tokenizer():
    return load_tokenizer(MODELS_DIR / "tokenizer")


def world_data_params() -> dict:
    """The world's generator settings (params.yaml: worlds.kv_arithmetic.data), e.g. for random_prefixes."""
    return load_params()["worlds"][WORLD]["data"]


def held_in_keys() -> set[str]:
    return {r["key"] for r in rows("d_kv") if r["held_in"]}


def exact_match(model, tokenizer, sets: dict[str, list[dict]], *, max_new_tokens: int, batch_size: int = 100):
    """Greedy generation, no stop string but end of text, exact match of the stripped completion against the
    stripped target (no cut_at) -> ({set: accuracy in %}, one prediction record per row: dataset, prompt,
    target, prediction, graded, correct)."""
    ecfg = {"max_new_tokens": max_new_tokens, "batch_size": batch_size,
            "sets": {name: {"metric": "exact_match"} for name in sets}}
    metrics, records = evaluate_sets(model, tokenizer, sets, ecfg, progress=False)
    predictions = [{"dataset": r["set"], **{k: v for k, v in r.items() if k != "set"}} for r in records]
    return {name: m["score"] for name, m in metrics.items()}, predictions


def wrap_cross_attention_sdpa(wrapper) -> None:
    """Route the composition's cross-attention through `wrapper(q, k, v, attn_mask=None, **kw)`.

    Replaces the `F` that pipeline/composition/cross_attention.py reads with a copy of torch.nn.functional whose
    scaled_dot_product_attention is `wrapper`; the bases' own attention is untouched. The wrapper is called
    once per connection per forward pass, in the order the anchor's layers run (within one anchor layer, in
    the order the connections are listed)."""
    import pipeline.composition.cross_attention as cross_attention

    functional = dict(vars(torch.nn.functional))
    functional["scaled_dot_product_attention"] = wrapper
    cross_attention.F = types.SimpleNamespace(**functional)


def cross_attention_call_order(config) -> list[tuple[int, int, int]]:
    """(augmenting index, mA layer, mB layer) of each cross-attention call of one forward pass, in call order
    (see wrap_cross_attention_sdpa)."""
    calls = [(j, a, c, i) for a, record in enumerate(config.augmenting)
             for c, (i, j) in enumerate(record["connections"])]
    return [(a, i, j) for j, a, c, i in sorted(calls)]
