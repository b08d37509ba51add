"""Re-record the code dependencies of dvc.lock and real/dvc.lock after a change to pipeline/ that cannot alter any
stage's output (a docstring, a new method no stage calls, a fix for input that used to raise).

For every stage of both pipelines, every dependency under pipeline/ (a file, or a folded package folder such as
pipeline/composition) gets the hash DVC computes for it now; nothing else in the locks changes: no data, model or
report dependency and no output. It is what `dvc commit -f` writes when every output is the same, without needing
the outputs on this machine. Whether a change leaves the outputs alone is the committer's claim: say why in the
commit message, and rerun the stages (dvc repro) when it might not.

    python scripts/relock_code.py            # rewrite both locks, print what changed
    python scripts/relock_code.py --check    # print what would change; exit 1 if anything would
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {"dvc.yaml": ROOT / "dvc.lock", "real/dvc.yaml": ROOT / "real" / "dvc.lock"}
ENTRY = re.compile(r"(    - path: (?P<path>\S+)\n      hash: md5\n      md5: )(?P<md5>\S+)\n      size: (?P<size>\d+)\n"
                   r"(?:      nfiles: (?P<nfiles>\d+)\n)?")


def current_hashes(paths: set[str]) -> dict[str, tuple[str, int, int | None]]:
    """path -> (md5, size, nfiles or None), as DVC hashes it in this workspace (.dvcignore applies)."""
    from dvc.repo import Repo
    from dvc_data.hashfile.build import build

    repo = Repo(str(ROOT))
    out = {}
    for path in sorted(paths):
        if not (ROOT / path).exists():
            sys.exit(f"error: {path} is a code dependency in a lock but is not in this checkout")
        _, meta, obj = build(repo.cache.local, str(ROOT / path), repo.fs, "md5", ignore=repo.dvcignore)
        out[path] = (obj.hash_info.value, meta.size, meta.nfiles if meta.isdir else None)
    return out


def relock(text: str, hashes: dict) -> tuple[str, list[str]]:
    changed = []

    def replace(match: re.Match) -> str:
        path = match["path"]
        if path not in hashes:
            return match.group(0)
        md5, size, nfiles = hashes[path]
        if (md5, str(size)) != (match["md5"], match["size"]):
            changed.append(path)
        tail = f"      nfiles: {nfiles}\n" if nfiles is not None else ""
        return f"{match.group(1)}{md5}\n      size: {size}\n{tail}"

    return ENTRY.sub(replace, text), changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a lock would change")
    args = parser.parse_args(argv)
    texts = {name: lock.read_text() for name, lock in LOCKS.items() if lock.exists()}
    paths = {m["path"] for text in texts.values() for m in ENTRY.finditer(text) if m["path"].startswith("pipeline")}
    hashes = current_hashes(paths)
    stale = False
    for name, text in texts.items():
        new, changed = relock(text, hashes)
        if changed:
            stale = True
            counts = {p: changed.count(p) for p in dict.fromkeys(changed)}
            print(f"{LOCKS[name].relative_to(ROOT)}: " + ", ".join(f"{p} ({n} stages)" for p, n in counts.items()))
            if not args.check:
                LOCKS[name].write_text(new)
    if not stale:
        print("every code dependency in the locks is as recorded")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
