"""Stage build_data@<world>: `python -m pipeline.build_data <world>` writes data/<world>/."""
from __future__ import annotations

import json

from pipeline.config import PipelineError, atomic_dir, cli, load_params
from pipeline.worlds import get_world


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.build_data <world>")
    params = load_params()
    name = argv[0]
    world = get_world(name)
    if name not in params.get("worlds", {}):
        raise PipelineError(f"world {name!r} has no section in params.yaml (worlds.{name})")
    with atomic_dir(f"data/{name}") as tmp:
        summary = world.build(params["worlds"][name], tmp, seed=params["seed"])
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
