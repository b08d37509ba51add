"""Stage build_data@<world>: `python -m pipeline.build_data <world>` writes data/<world>/ (all or nothing)."""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_dir, atomic_write_json
from pipeline.params import load_params
from pipeline.worlds import get_world


def build_world_data(params: dict, name: str, root: Path = Path("data")) -> dict:
    world = get_world(params, name)
    with atomic_dir(root / name) as tmp:
        summary = world.build(params["worlds"][name]["data"], tmp, seed=params["seed"])
        if not (tmp / "summary.json").exists():
            atomic_write_json(tmp / "summary.json", summary)
    return summary


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.build_data <world>")
    print(json.dumps(build_world_data(load_params(), argv[0])))


if __name__ == "__main__":
    main()
