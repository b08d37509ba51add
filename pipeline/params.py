"""`python -m pipeline.params [overrides...]` composes conf/ (Hydra) into params.yaml.

Same composition as DVC's Hydra integration (`dvc config hydra.enabled True`,
then `dvc exp run -S preset=paper`); `--check` exits 1 if params.yaml differs.
"""
from __future__ import annotations

from pipeline.config import PARAMS_FILE, PipelineError, cli, compose_params, dump_params, load_params


@cli
def main(argv: list[str]) -> None:
    check = "--check" in argv
    overrides = [a for a in argv if a != "--check"]
    params = compose_params(overrides)
    if check:
        if load_params(PARAMS_FILE) != params:
            raise PipelineError("params.yaml differs from conf/: run `make params`")
        print("params.yaml matches conf/")
        return
    dump_params(params, PARAMS_FILE)
    print(f"wrote {PARAMS_FILE} (preset={params['preset']})")


if __name__ == "__main__":
    main()
