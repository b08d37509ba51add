"""Files the stages write and read: atomic writes (a killed stage never leaves a file or directory that looks
done), JSONL, upstream checks, and content fingerprints."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Iterable

from pipeline.errors import PipelineError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    _atomic_write(path, text, "w")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    _atomic_write(path, data, "wb")


def _atomic_write(path: str | os.PathLike, content, mode: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            f.write(content)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the permissions open() would
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
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp creates 0700
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


def damaged_file(path: str | os.PathLike) -> str | None:
    """Why a weights or Trainer-state file is not whole (None when it is): a .safetensors file must hold its
    header and end exactly where the header's last tensor ends; a torch file (.pt, .pth, .bin: a zip archive, whose
    directory is written last, at its end) must open as a zip (a .bin that is not a zip, e.g. a legacy torch pickle,
    is not checked). Reads the headers only, not the tensors."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if path.suffix == ".safetensors":
            with open(path, "rb") as f:
                head = f.read(8)
                n = int.from_bytes(head, "little")
                if len(head) < 8 or n > size - 8:
                    return f"truncated ({size} bytes, shorter than its header)"
                header = json.loads(f.read(n))
            end = 8 + n + max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
            if end != size:
                return f"{'truncated' if size < end else 'damaged'} ({size} bytes, its header describes {end})"
        elif path.suffix in (".pt", ".pth", ".bin"):
            with open(path, "rb") as f:
                magic = f.read(4)
            if size < 22:  # shorter than a zip's end record
                return f"truncated ({size} bytes)"
            if magic == b"PK\x03\x04":  # torch.save's zip (a legacy pickle, or another format, is not checked)
                try:
                    with zipfile.ZipFile(path) as z:
                        z.infolist()
                except zipfile.BadZipFile:
                    return f"truncated or damaged ({size} bytes, no zip directory at its end)"
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError, TypeError, KeyError, IndexError, zipfile.BadZipFile) as e:
        return f"unreadable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'})"
    return None


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def require_whole_model(directory: str | os.PathLike, what: str = "model") -> Path:
    """directory, or one PipelineError naming its first truncated or damaged weights file."""
    directory = Path(directory)
    for p in sorted(directory.glob("*")):
        why = damaged_file(p) if p.suffix in WEIGHT_SUFFIXES else None
        if why:
            raise PipelineError(f"{what} file {p} is {why}: rerun the stage that writes {directory} (dvc repro)")
    return directory


def fingerprint(obj: Any, files: Iterable[str | os.PathLike] = ()) -> str:
    """Short hash of a JSON-able object plus the bytes of some files (or directories)."""
    h = hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode())
    for f in files:
        f = Path(f)
        if not f.exists():
            raise PipelineError(f"missing upstream output {f}: run its stage first (dvc repro)")
        paths = sorted(p for p in f.rglob("*") if p.is_file()) if f.is_dir() else [f]
        for p in paths:
            h.update(str(p.relative_to(f) if f.is_dir() else p.name).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]
