"""Stage build_data@<world>: `python -m pipeline.build_data <world>` writes data/<world>/ (all or nothing)."""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_dir, atomic_write_json
from pipeline.layout import DATA, SUMMARY_FILE
from pipeline.params import load_params
from pipeline.worlds import get_world


def build_world_data(params: dict, name: str, root: Path = DATA) -> dict:
    world = get_world(params, name)
    with atomic_dir(root / name) as tmp:
        summary = world.build(params["worlds"][name]["data"], tmp, seed=params["seed"])
        if not (tmp / SUMMARY_FILE).exists():
            atomic_write_json(tmp / SUMMARY_FILE, summary)
    return summary


def _hub_ids(node, where: str):
    """(conf path, id) of every `pretrained:` source under a world's conf that is neither a local folder nor a
    package (`pkg:`, `pkg-parts:`): the hub ids its stages would download."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "pretrained" and isinstance(v, str) and not v.startswith(("pkg:", "pkg-parts:")) and not Path(v).exists():
                yield f"{where}.{k}", v
            else:
                yield from _hub_ids(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _hub_ids(v, f"{where}[{i}]")


def preflight(params: dict, name: str) -> None:
    """What would fail later in the chain, asked before any data is built (the paper preset's data takes minutes
    to build and hundreds of MB): the runtime's device, and the hub for every model the world downloads."""
    from pipeline.hub import hub_reachable
    from pipeline.training.trainer import check_runtime, require_device

    runtime = params.get("runtime") or {}
    check_runtime(runtime)
    require_device(runtime)
    wanted = list(_hub_ids((params.get("worlds") or {}).get(name) or {}, f"worlds.{name}"))
    if wanted:
        reachable, why = hub_reachable()
        if not reachable:
            from huggingface_hub import try_to_load_from_cache

            missing = [(k, v) for k, v in wanted if not isinstance(try_to_load_from_cache(v, "config.json"), str)]
            if missing:
                key, hub_id = missing[0]
                raise PipelineError(f"{key} names the hub model {hub_id!r}, which is not cached here, and the hub is "
                                    f"not reachable ({why}): download it, or point {key} at a local folder")


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.build_data <world>")
    params = load_params()
    get_world(params, argv[0])
    preflight(params, argv[0])
    print(json.dumps(build_world_data(params, argv[0])))


if __name__ == "__main__":
    main()
