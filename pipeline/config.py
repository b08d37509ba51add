"""Shared helpers for the pipeline stages: params, paths, atomic writes, errors, W&B.

One source of truth: the Hydra configs in conf/ are composed into params.yaml
(`make params`, or DVC's Hydra integration on `dvc exp run`); every stage reads
params.yaml only.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from pipeline.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
PARAMS_FILE = "params.yaml"


class PipelineError(UserError):
    """Bad input or missing upstream output: reported as one line, exit code 2."""


def cli(main: Callable[[list[str]], Any]) -> Callable[[], None]:
    """Wrap a stage entry point: a PipelineError becomes one clear line on stderr."""

    @functools.wraps(main)
    def wrapper(argv: list[str] | None = None) -> None:
        try:
            main(sys.argv[1:] if argv is None else argv)
        except UserError as e:  # ours, the composition's and the benchmarks' one-line errors
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2)

    return wrapper


# ---------------------------------------------------------------- params


def load_params(path: str | os.PathLike | None = None) -> dict:
    import yaml

    p = Path(path or os.environ.get("CALM_PARAMS", PARAMS_FILE))
    if not p.exists():
        raise PipelineError(f"{p} not found: run `make params` (composes conf/ into params.yaml)")
    with open(p) as f:
        return yaml.safe_load(f)


def compose_params(overrides: Iterable[str] = (), conf_dir: str | os.PathLike | None = None) -> dict:
    """Compose conf/config.yaml with Hydra (as DVC's Hydra integration does) into a plain dict."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    conf_dir = Path(conf_dir or ROOT / "conf").resolve()
    overrides = list(overrides)
    presets = sorted(p.stem for p in (conf_dir / "preset").glob("*.yaml"))
    for o in overrides:
        if o.split("=", 1)[0].lstrip("+~") == "preset":
            name = o.split("=", 1)[1] if "=" in o else ""
            if name not in presets:
                raise PipelineError(f"unknown preset {name!r}: choose one of {', '.join(presets)}")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(config_name="config", overrides=overrides)
            return OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PipelineError(f"cannot compose conf/: {first}") from None
    finally:
        GlobalHydra.instance().clear()


def dump_params(params: dict, path: str | os.PathLike = PARAMS_FILE) -> None:
    import yaml

    text = "# GENERATED from conf/ by `make params` (or DVC's Hydra integration): do not edit by hand.\n"
    text += yaml.safe_dump(params, sort_keys=False, default_flow_style=None, width=100)
    atomic_write_text(path, text)


# ---------------------------------------------------------------- files


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def atomic_write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=False) + "\n" for r in rows))


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temp directory that replaces `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    path = Path(path)
    if not path.exists():
        raise PipelineError(f"missing upstream output {path}: run its stage first (dvc repro)")
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def require(path: str | os.PathLike, what: str = "upstream output") -> Path:
    path = Path(path)
    if not path.exists():
        raise PipelineError(f"missing {what} {path}: run its stage first (dvc repro)")
    return path


def fingerprint(obj: Any, files: Iterable[str | os.PathLike] = ()) -> str:
    """Short hash of a JSON-able object plus the bytes of some files (or directories)."""
    h = hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode())
    for f in files:
        f = Path(f)
        paths = sorted(p for p in f.rglob("*") if p.is_file()) if f.is_dir() else [f]
        for p in paths:
            h.update(str(p.relative_to(f) if f.is_dir() else p.name).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- W&B


def wandb_enabled() -> bool:
    """W&B is offline by default (no account needed; `wandb sync wandb/` later)."""
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_DIR", os.getcwd())  # -> ./wandb/ (gitignored, .dvcignore'd)
    os.environ.setdefault("WANDB_SILENT", "true")
    return os.environ["WANDB_MODE"] != "disabled"


def wandb_run(name: str, group: str, config: dict, project: str):
    """A wandb run (or None when WANDB_MODE=disabled)."""
    if not wandb_enabled():
        return None
    import wandb

    return wandb.init(project=project, name=name, group=group, config=config, reinit="finish_previous")
