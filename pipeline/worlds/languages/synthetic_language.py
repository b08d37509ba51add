"""Synthetic languages: fixed, seeded, reversible transforms of English (the languages world, paper §4.2).

A synthetic language `syn-<src>` writes English in pseudo-words whose letters and letter pairs follow the
character statistics of a real language <src> (its UDHR text: resources/udhr_char_stats.json).  It is
never that language: the name says where the spelling statistics come from, nothing more.

One sentence is rendered in four steps, each invertible, so `unrender(render(s, L), L) == s` for every
sentence of printable ASCII (tested on FLORES devtest English and on the training text):

1. Tokens.  English is cut into words ([A-Za-z]+), numbers ([0-9]+) and single other characters.
   Kept as they are: numbers, and names: words with a capital letter that are not the first word of a
   sentence (and any word with a capital after its first letter: "NASA", "iPhone").  A sentence's first
   word (the first word or number of the line, or after . ! ?) is rendered, its capital restored: so a
   name that opens a sentence is spelled like any other word (documented limitation).  In a script
   without case (Devanagari, Thai, Arabic) a lowercase sentence-initial word is kept instead, since no
   capital could mark it.
2. Words.  A lowercase English word w is written spell(swap(w)):
   - swap (the lexicon) exchanges each of the language's K lexicon words (the K most frequent words of the
     English training text) with a pseudo-word q, and q with it (an involution on letter strings, so
     every string keeps a unique rendering); q is chosen so that spell(q) is a word drawn from the source
     language's letter-bigram model, of a length that follows the English word's.  Inflected lexicon
     words whose stem is a lexicon word share the stem's pseudo-word plus the language's own affix
     ("walked" = walk + PAST), a prefix or a suffix per language: the inflection changes.
   - spell is the spelling rule for every other word (rare words, FLORES words never seen in training):
     a prefix-free code from English letters and a few digraphs ("th", "sh", ...) to graphemes of the
     source language, matched by frequency rank (vowels to vowels, consonants to consonants) with seeded
     noise.  "near" languages in Latin script keep most letters and change a few (c -> ç, th -> þ, a
     swap such as v <-> w); other scripts are transliterated letter for letter.
3. Grammar ("far" languages; "near" ones may have the postposed article only).  Articles become
   suffixes on the next word ("the house" -> house-DEF, Scandinavian-like), a set of prepositions become
   case suffixes after the article ("in the house" -> house-DEF-IN, postpositions), and "A of B" with
   one-word A becomes "B-GEN A" (possessor first, as in Turkish or Marathi).  Suffixes start with a
   marker letter that the spelling never writes, so the decoder finds them; only lowercase, non-initial,
   non-function words take suffixes.  Together these change word order and inflection.
4. Case.  A rendered first word is capitalised (cased scripts).

`unrender` reads tokens back in the same order: kept tokens are recognisable (a capital outside the first
word, or ASCII in a non-Latin script), suffixes by their marker, words by the prefix-free code.
"""
from __future__ import annotations

import json
import re
import unicodedata
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


STATS_FILE = Path(__file__).parent / "resources" / "udhr_char_stats.json"

ENGLISH_LETTERS_BY_FREQUENCY = "etaoinshrdlcumwfgypbvkjxqz"
VOWELS_EN = set("aeiou")
DIGRAPHS = ["th", "sh", "ch", "ee", "oo", "ng", "ph", "wh", "qu", "ck"]  # in order of use
ARTICLES = ("the", "a", "an")
CASE_PREPOSITIONS = ["in", "to", "for", "on", "with", "at", "from", "by", "of", "about", "into"]
FUNCTION_WORDS = frozenset("""
the a an of in to for on with at from by about into over after under between through during without before
against among as and or but if that than because so while when which who whom whose what where how why
is are was were be been being has have had do does did will would can could should may might must shall
he she it they we you i me him her us them his its their our my your this these those each every some any
no all both many much more most few other another not there here then also only just very
""".split())
INFLECTIONS = [("ing", "PROG"), ("ed", "PAST"), ("es", "PL"), ("s", "PL"), ("ly", "ADV"), ("er", "CMP"),
               ("est", "SUP")]

_ENGLISH_TOKEN = re.compile(r"[A-Za-z]+|[0-9]+|.", re.DOTALL)
_LOWER = re.compile(r"[a-z]+")
_TITLE = re.compile(r"[A-Z][a-z]*")
_SENTENCE_END = frozenset(".!?")


def load_stats() -> dict:
    return json.loads(STATS_FILE.read_text(encoding="utf-8"))["languages"]


def _rng(*keys) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(str(k).encode()) for k in keys])


_LATIN_MODIFIERS = {"OPEN", "CLOSED", "TURNED", "DOTLESS", "REVERSED", "BARRED", "SMALL", "CAPITAL"}


def _is_vowel(c: str) -> bool:
    name = unicodedata.name(c, "")
    if name.startswith("LATIN SMALL LETTER "):
        letter = next((w for w in name[len("LATIN SMALL LETTER "):].split() if w not in _LATIN_MODIFIERS), "")
        return letter in ("A", "E", "I", "O", "U", "Y", "AE", "OE", "SCHWA")
    return "VOWEL" in name or " SARA " in name or name in (
        "ARABIC LETTER ALEF", "ARABIC LETTER WAW", "ARABIC LETTER YEH", "ARABIC LETTER ALEF MAKSURA")


# near-language sound changes whose target letter has no base letter of its own
_RELATED = {"ø": "o", "æ": "a", "ł": "l", "ð": "d", "þ": "th", "ħ": "h", "ɗ": "d", "ɓ": "b", "ƙ": "k",
            "ɣ": "g", "ɛ": "e", "ŋ": "ng", "đ": "d", "ı": "i"}
_SWAPS = [("c", "k"), ("v", "w"), ("f", "v"), ("j", "y"), ("i", "y"), ("s", "z"), ("b", "p")]


@dataclass
class Language:
    code: str                      # "syn-lij"
    source: str                    # "lij": whose UDHR character statistics the spelling follows
    source_name: str
    resource: str                  # "lrl" | "hrl"
    kind: str                      # "near" | "far"
    script: str
    cased: bool
    spelling: dict                 # English unit (letter or digraph) -> grapheme
    marker: str | None             # the letter every suffix starts with (never written by the spelling)
    suffixes: dict                 # role ("the", "a", "an", "in", ..., "of", "gen") -> suffix string
    swap: dict                     # the lexicon as an involution: English word <-> pseudo letter string
    lexicon_size: int
    affixes: dict = field(default_factory=dict)   # inflection tag -> (position, affix grapheme string)
    articles: bool = False
    cases: tuple = ()
    genitive_first: bool = False

    def __post_init__(self):
        self._inverse = {g: u for u, g in self.spelling.items()}
        self._max_grapheme = max(len(g) for g in self._inverse)
        self._digraphs = {u for u in self.spelling if len(u) == 2}
        self._suffix_role = {s: r for r, s in self.suffixes.items()}
        letters = set("".join(self.spelling.values())) | set("".join(self.suffixes.values()))
        if self.marker:
            letters.add(self.marker)
        self.letters = frozenset(letters)
        self.upper = frozenset(c.upper() for c in letters) if self.cased else frozenset()
        chars = "".join(sorted(self.letters | self.upper | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")))
        self._token = re.compile("[" + re.escape(chars) + "]+|[0-9]+|.", re.DOTALL)
        self._render_cache: dict = {}
        self._unrender_cache: dict = {}

    # ---------------------------------------------------------------- words

    def spell(self, word: str) -> str:
        out, i = [], 0
        while i < len(word):
            if word[i:i + 2] in self._digraphs:
                out.append(self.spelling[word[i:i + 2]])
                i += 2
            else:
                out.append(self.spelling[word[i]])
                i += 1
        return "".join(out)

    def unspell(self, text: str) -> str | None:
        """The English letter string whose spelling is `text`, or None (the code is prefix-free)."""
        out, i = [], 0
        while i < len(text):
            for n in range(1, self._max_grapheme + 1):
                unit = self._inverse.get(text[i:i + n])
                if unit is not None:
                    out.append(unit)
                    i += n
                    break
            else:
                return None
        return "".join(out)

    def render_word(self, word: str) -> str:
        """A lowercase English word in this language (lexicon, then spelling)."""
        r = self._render_cache.get(word)
        if r is None:
            r = self._render_cache[word] = self.spell(self.swap.get(word, word))
        return r

    def unrender_word(self, text: str) -> str:
        w = self._unrender_cache.get(text)
        if w is None:
            q = self.unspell(text)
            if q is None:
                raise ValueError(f"{self.code}: {text!r} is not a word of this language")
            w = self._unrender_cache[text] = self.swap.get(q, q)
        return w

    def describe(self) -> dict:
        return {
            "code": self.code, "source": self.source, "source_name": self.source_name,
            "resource": self.resource, "kind": self.kind, "script": self.script, "cased": self.cased,
            "lexicon_size": self.lexicon_size, "articles_as_suffixes": self.articles,
            "case_suffixes": list(self.cases), "genitive_first": self.genitive_first,
            "spelling": dict(self.spelling), "marker": self.marker, "suffixes": dict(self.suffixes),
            "affixes": {k: list(v) for k, v in self.affixes.items()},
        }


# ---------------------------------------------------------------- sentences


def _initial_flags(tokens: list[str], letters=frozenset()) -> list[bool]:
    """True for the first word or number of each sentence (line start, or after . ! ?)."""
    flags, start = [], True
    for t in tokens:
        if t in _SENTENCE_END:
            flags.append(False)
            start = True
        elif t[0].isalnum() or t[0] in letters:
            flags.append(start)
            start = False
        else:
            flags.append(False)
    return flags


def render(sentence: str, lang: Language) -> str:
    """`sentence` (printable ASCII English) written in the synthetic language `lang`."""
    tokens = _ENGLISH_TOKEN.findall(sentence)
    flags = _initial_flags(tokens)
    # items: [english token, output text, renderable (lowercase, non-initial), suffix roles]
    items = []
    for t, initial in zip(tokens, flags):
        if _LOWER.fullmatch(t):
            if initial and not lang.cased:
                items.append([t, t, False, None])          # kept: no capital could mark it
            else:
                items.append([t, lang.render_word(t), not initial, None])
        elif initial and _TITLE.fullmatch(t):
            w = lang.render_word(t.lower())
            items.append([t, w[0].upper() + w[1:] if lang.cased else w, False, None])
        else:
            items.append([t, t, False, None])              # names, numbers, punctuation, spaces
    if lang.articles:
        items = _merge(items, lambda e: e in ARTICLES and e in lang.suffixes, allow_suffixed_host=False)
    if lang.cases:
        items = _merge(items, lambda e: e in lang.cases, allow_suffixed_host=True)
    if lang.genitive_first:
        items = _genitive_first(items)
    out = []
    for eng, text, _, roles in items:
        out.append(text + "".join(lang.suffixes[r] for r in roles) if roles else text)
    return "".join(out)


def _host_ok(item, allow_suffixed_host: bool) -> bool:
    eng, _, renderable, roles = item
    if not renderable or eng in FUNCTION_WORDS:
        return False
    if roles and (not allow_suffixed_host or any(r not in ARTICLES for r in roles)):
        return False
    return True


def _merge(items, is_function, allow_suffixed_host: bool):
    """A renderable function word + " " + a renderable content word -> the word with the function's suffix."""
    out, i = [], 0
    while i < len(items):
        it = items[i]
        if (it[2] and not it[3] and is_function(it[0]) and i + 2 < len(items) and items[i + 1][0] == " "
                and _host_ok(items[i + 2], allow_suffixed_host)):
            host = items[i + 2]
            out.append([host[0], host[1], host[2], (host[3] or []) + [it[0]]])
            i += 3
        else:
            out.append(it)
            i += 1
    return out


def _genitive_first(items):
    """word + " " + word-OF  ->  word-GEN + " " + word (each token in at most one swap)."""
    out, i = [], 0
    while i < len(items):
        a = items[i]
        if (i + 2 < len(items) and items[i + 1][0] == " " and a[2] and a[0] not in FUNCTION_WORDS
                and all(r in ARTICLES for r in (a[3] or [])) and items[i + 2][3]
                and items[i + 2][3][-1] == "of"):
            b = items[i + 2]
            out += [[b[0], b[1], b[2], b[3][:-1] + ["gen"]], items[i + 1], a]
            i += 3
        else:
            out.append(a)
            i += 1
    return out


def unrender(text: str, lang: Language) -> str:
    """The English sentence that `render` wrote as `text` (raises ValueError on text it cannot have written)."""
    tokens = lang._token.findall(text)
    flags = _initial_flags(tokens, lang.letters)
    items = []  # [kind, value, roles]
    for t, initial in zip(tokens, flags):
        c = t[0]
        if not (c.isalpha() or c in lang.letters):
            items.append(["raw", t, None])
            continue
        if lang.cased:
            if t == t.lower():
                kind = "word"
            elif initial and t[1:] == t[1:].lower() and t[0].lower() != t[0]:
                kind = "capital"
            else:
                kind = "raw"
        else:
            kind = "raw" if t.isascii() else ("capital" if initial else "word")
        if kind == "raw":
            items.append(["raw", t, None])
            continue
        if kind == "capital":
            t = t[0].lower() + t[1:] if lang.cased else t
            w = lang.unrender_word(t)
            items.append(["raw", w[0].upper() + w[1:], None])
            continue
        roles = None
        if lang.marker and lang.marker in t:
            cut = t.index(lang.marker)
            parts = [p for p in re.split("(?=" + re.escape(lang.marker) + ")", t[cut:]) if p]
            roles = []
            for p in parts:
                if p not in lang._suffix_role:
                    raise ValueError(f"{lang.code}: unknown suffix {p!r} in {t!r}")
                roles.append(lang._suffix_role[p])
            t = t[:cut]
        items.append(["word", lang.unrender_word(t), roles])
    # genitive back: word-GEN " " word -> word " " word-of
    i, ordered = 0, []
    while i < len(items):
        it = items[i]
        if it[2] and it[2][-1] == "gen":
            if i + 2 >= len(items) or items[i + 1][1] != " ":
                raise ValueError(f"{lang.code}: genitive without its head in {text!r}")
            ordered += [items[i + 2], items[i + 1], ["word", it[1], it[2][:-1] + ["of"]]]
            i += 3
        else:
            ordered.append(it)
            i += 1
    out = []
    for kind, value, roles in ordered:
        if roles:
            out.append("".join(r + " " for r in reversed(roles)))
        out.append(value)
    return "".join(out)
