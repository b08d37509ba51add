"""The wrapper every stage entry point uses: a UserError becomes one line on stderr and exit code 2 (under
several processes, one line naming the process that failed: the launcher then stops the others); `-h` or `--help`
prints the entry point's module docstring (its usage) and runs nothing."""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from pipeline.distributed import rank, world_size
from pipeline.errors import UserError


def cli(main: Callable[[list[str]], Any]) -> Callable[[], None]:
    @functools.wraps(main)
    def wrapper(argv: list[str] | None = None) -> None:
        argv = sys.argv[1:] if argv is None else argv
        if argv[:1] in (["-h"], ["--help"]):  # else a stage would read it as a world, a key or a Hydra override
            print((sys.modules[main.__module__].__doc__ or f"usage: python -m {main.__module__} ...").strip())
            return
        try:
            main(argv)
        except UserError as e:  # ours, the composition's and the benchmarks' one-line errors
            several = world_size() > 1
            where = f" (process {rank()} of {world_size()})" if several else ""
            print(f"error{where}: {e}", file=sys.__stderr__ if several else sys.stderr)
            raise SystemExit(2)
        except BaseException:
            if world_size() > 1:  # a process silenced by pipeline.distributed still shows its traceback
                sys.stderr = sys.__stderr__
            raise

    return wrapper
