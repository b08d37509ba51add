"""Stage synthesize@<world>/<name>: `python -m pipeline.synthesize <world>/<name>` writes a training set that one of
the world's own models makes (conf: `worlds.<world>.synthesized.<name>`, with `by: <model>` and the world module's
`method`), e.g. back-translation: English sentences put into the low-resource languages by the multilingual mA, each
paired with the English it came from (pipeline/worlds/languages_xtok/back_translation.py).

A model trains on it by naming `synthesized/<name>` in its `data:` list. Writes, all or nothing,
data/<world>.synthesized/<name>/:
    rows.jsonl        the set ({prompt, target, ...} rows, as a world's splits)
    candidates.jsonl  every candidate the model made, with the verdicts that kept or dropped it
    summary.json      counts, what the filters dropped, and the float path (no seconds: the folder is the same bytes
                      on every run on the same float path, so what trains on it does not rerun)
"""
from __future__ import annotations

import time

from pipeline import float_path
from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_dir, atomic_write_json, atomic_write_jsonl
from pipeline.layout import SUMMARY_FILE, model_dir, synthesized_dir
from pipeline.params import load_params, model_spec
from pipeline.worlds import get_world

ROWS_FILE = "rows.jsonl"
CANDIDATES_FILE = "candidates.jsonl"


def synthesized_spec(params: dict, key: str) -> tuple[str, str, dict]:
    """(world, name, its conf) of `<world>/<name>`, or one line saying what is not declared."""
    world, name, cfg = model_spec(params, key, section="synthesized")
    if cfg.get("by") not in (params["worlds"][world].get("models") or {}):
        raise PipelineError(f"synthesize {key}: `by: {cfg.get('by')}` is not a model of world {world}")
    return world, name, cfg


def synthesize(params: dict, key: str) -> dict:
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model
    from pipeline.training.trainer import set_threads

    world, name, cfg = synthesized_spec(params, key)
    module = get_world(params, world)
    if not hasattr(module, "synthesize"):
        raise PipelineError(f"synthesize {key}: world module {module.__name__} defines no `synthesize`")
    made_by = model_dir(world, cfg["by"])
    if not (made_by / "train_info.json").is_file():
        raise PipelineError(f"synthesize {key}: its model {made_by} is not built (dvc repro train@{world}/{cfg['by']})")
    set_threads(params.get("runtime") or {})
    start = time.process_time()
    tokenizer = load_tokenizer(made_by)   # the model's own (a cross-tokenizer world's mA reads its own)
    model = load_trained_model(made_by).eval()
    rows, candidates, summary = module.synthesize(params, world, name, cfg, model, tokenizer)
    seconds = round(time.process_time() - start)
    if not rows:
        raise PipelineError(f"synthesize {key}: none of the {len(candidates)} candidates {cfg['by']} made was kept "
                            f"(its filters: {summary.get('dropped')})")
    summary = {"rows": len(rows), "candidates": len(candidates), **summary, **float_path.describe()}
    with atomic_dir(synthesized_dir(world, name)) as tmp:
        atomic_write_jsonl(tmp / ROWS_FILE, rows)
        atomic_write_jsonl(tmp / CANDIDATES_FILE, candidates)
        atomic_write_json(tmp / SUMMARY_FILE, summary)
    return {**summary, "cpu_s": seconds}


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1 or "/" not in argv[0]:
        raise PipelineError("usage: python -m pipeline.synthesize <world>/<name>")
    summary = synthesize(load_params(), argv[0])
    print(f"{argv[0]}: {summary['rows']} rows kept of {summary['candidates']} candidates ({summary['cpu_s']} CPU-s)")


if __name__ == "__main__":
    main()
