"""The wrapper every stage entry point uses: a UserError becomes one line on stderr and exit code 2."""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from pipeline.errors import UserError


def cli(main: Callable[[list[str]], Any]) -> Callable[[], None]:
    @functools.wraps(main)
    def wrapper(argv: list[str] | None = None) -> None:
        try:
            main(sys.argv[1:] if argv is None else argv)
        except UserError as e:  # ours, the composition's and the benchmarks' one-line errors
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2)

    return wrapper
