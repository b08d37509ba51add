"""Building a synthetic language (synthetic_language.py) from a real language's letter statistics: its spelling
(near: a few letters changed; far: a letter-bigram model of the source), lexicon, affixes and grammar."""
from __future__ import annotations

import unicodedata
from functools import lru_cache

import numpy as np

from pipeline.errors import PipelineError
from pipeline.worlds.languages.synthetic_language import (CASE_PREPOSITIONS, DIGRAPHS, ENGLISH_LETTERS_BY_FREQUENCY,
                                                          INFLECTIONS, Language, STATS_FILE, VOWELS_EN, _RELATED,
                                                          _SWAPS, _is_vowel, _rng, load_stats)


# ---------------------------------------------------------------- building a language


class _CharModel:
    """Letter-bigram model of a source language ('#' = word boundary), restricted to some letters."""

    def __init__(self, stats: dict):
        self.letters = stats["letters"]
        self.unigram = dict(zip(self.letters, stats["letter_counts"]))
        self.bigram = {}
        for item in stats["bigrams"].split(" "):
            pair, n = item.rsplit(":", 1)
            self.bigram[pair] = int(n)
        self.mean_word_length = min(float(stats["mean_word_length"]), 7.0)

    def sample(self, rng, length: int, allowed: list[str]) -> str:
        total = sum(self.unigram.get(c, 1) for c in allowed)
        base = np.array([self.unigram.get(c, 1) / total for c in allowed])
        prev, out = "#", []
        for _ in range(length):
            w = np.array([self.bigram.get(prev + c, 0) for c in allowed], dtype=float) + 2.0 * base
            c = allowed[int(rng.choice(len(allowed), p=w / w.sum()))]
            out.append(c)
            prev = c
        return "".join(out)


def _far_spelling(stats: dict, rng, reserved: set, n_digraphs: int) -> dict:
    letters = [c for c in stats["letters"] if c not in reserved]
    seconds = list(letters)
    units = list(ENGLISH_LETTERS_BY_FREQUENCY) + DIGRAPHS[:n_digraphs]
    escapes: list[str] = []            # the rarest letters open two-letter graphemes, as many as needed
    while len(letters) < len(units) and len(letters) + len(escapes) * len(seconds) < len(units):
        escapes.append(letters.pop())
    pools = {}
    for c in letters:
        pools.setdefault(_is_vowel(c), []).append(c)
    unit_class = {u: (u in VOWELS_EN or u in ("ee", "oo")) for u in units}
    # rank-match within class, with seeded noise on the ranks
    assignment, left_units, left_chars = {}, [], []
    for cls in (True, False):
        us = [u for u in units if unit_class[u] == cls]
        us = [u for _, u in sorted(((i + rng.normal(0, 1.2), u) for i, u in enumerate(us)))]
        cs = pools.get(cls, [])
        for u, c in zip(us, cs):
            assignment[u] = c
        left_units += us[len(cs):]
        left_chars += cs[len(us):]
    left_units.sort(key=units.index)
    for u, c in zip(left_units, left_chars):
        assignment[u] = c
    rest = left_units[len(left_chars):]
    pairs = [e + c for e in escapes for c in seconds]
    if len(pairs) < len(rest):
        raise PipelineError(f"spelling: {len(stats['letters'])} letters cannot spell {len(units)} English units")
    for u, g in zip(rest, pairs):
        assignment[u] = g
    return assignment


def _near_spelling(stats: dict, rng, n_changes: int) -> dict:
    spelling = {c: c for c in ENGLISH_LETTERS_BY_FREQUENCY}
    outputs = set(spelling.values())
    special = [c for c in stats["letters"] if not c.isascii()]
    candidates = []
    for c in special:
        base = _RELATED.get(c) or unicodedata.normalize("NFD", c)[0]
        if base.isascii() and base.isalpha():
            candidates.append((base, c))
    candidates += [("swap", s) for s in _SWAPS]
    order = rng.permutation(len(candidates))
    changes = 0
    for k in order:
        if changes >= n_changes:
            break
        a, b = candidates[k]
        if a == "swap":
            x, y = b
            if spelling.get(x) == x and spelling.get(y) == y:
                spelling[x], spelling[y] = y, x
                changes += 1
        elif b not in outputs and (a in spelling and spelling[a] == a or len(a) == 2 and a not in spelling):
            spelling[a] = b
            outputs = set(spelling.values())
            changes += 1
    # letters freed by a change (c -> ç frees "c") must not be outputs twice: every output is distinct
    assert len(set(spelling.values())) == len(spelling)
    return spelling


def build_language(source: str, resource: str, kind: str, stats: dict, lexicon_words: list[str],
                   avoid: set, settings: dict, language_seed: int) -> Language:
    if kind not in ("near", "far"):
        raise PipelineError(f"language {source}: kind must be near or far, got {kind!r}")
    rng = _rng("language", language_seed, source, resource, kind)
    model = _CharModel(stats)
    cased = bool(stats["cased"])
    latin = stats["script"] == "Latin"
    # the marker: a mid-frequency consonant of the source, never written by the spelling
    consonants = [c for c in stats["letters"] if not _is_vowel(c)]
    want_suffixes = kind == "far" or rng.random() < float(settings["near_article_probability"])
    if kind == "near" and latin:
        spelling = _near_spelling(stats, rng, int(rng.integers(settings["near_spelling_changes"][0],
                                                               settings["near_spelling_changes"][1] + 1)))
        free = [c for c in stats["letters"] if c not in set(spelling.values()) and not _is_vowel(c)]
        marker = free[0] if (want_suffixes and free) else None
    else:
        marker = None
        if want_suffixes and consonants:
            lo, hi = min(3, len(consonants) - 1), min(9, len(consonants))
            marker = consonants[int(rng.integers(lo, hi))] if hi > lo else consonants[-1]
        reserved = {marker} if marker else set()
        n_letters = len([c for c in stats["letters"] if c not in reserved])
        n_digraphs = 0 if kind == "near" else max(0, min(6, n_letters - 1 - 26))
        spelling = _far_spelling(stats, rng, reserved, n_digraphs)
    assert marker is None or marker not in "".join(spelling.values())

    # grammar
    articles = marker is not None
    cases: tuple = ()
    genitive = False
    if kind == "far" and marker:
        lo, hi = settings["far_case_suffixes"]
        n = int(rng.integers(lo, hi + 1))
        cases = tuple(CASE_PREPOSITIONS[:n])
        genitive = "of" in cases and rng.random() < float(settings["far_genitive_probability"])
        if not genitive and "of" not in cases and rng.random() < float(settings["far_genitive_probability"]):
            cases = cases + ("of",)
            genitive = True

    singles = [g for g in spelling.values() if len(g) == 1]
    allowed = [c for c in model.letters if c in singles]
    suffixes = {}
    if marker:
        roles = (["the", "a", "an"] if kind == "far" else ["the"]) + list(cases) + (["gen"] if genitive else [])
        used = set()
        body_letters = [c for c in model.letters if c != marker]
        for r in roles:
            for attempt in range(200):
                body = model.sample(rng, int(rng.integers(0, 3)) if attempt < 100 else 3, body_letters)
                s = marker + body
                if s not in used:
                    used.add(s)
                    suffixes[r] = s
                    break
            else:
                raise PipelineError(f"language {source}: cannot draw distinct suffixes")
        if kind == "near":
            articles = True

    # lexicon
    k = int(settings["lexicon_size"][kind])
    words = lexicon_words[:k]
    probe = Language(code=f"syn-{source}", source=source, source_name="", resource=resource, kind=kind,
                     script=stats["script"], cased=cased, spelling=spelling, marker=marker, suffixes={},
                     swap={}, lexicon_size=0)
    affixes = {}
    if kind == "far":
        for _, tag in INFLECTIONS:
            if tag in affixes:
                continue
            pos = "prefix" if rng.random() < float(settings["affix_prefix_probability"]) else "suffix"
            affixes[tag] = (pos, model.sample(rng, int(rng.integers(1, 3)), allowed))
    ratio = min(max(model.mean_word_length / 4.7, 0.75), 1.5)
    in_lexicon = set(words)
    swap: dict = {}
    used_p: set = set()

    def stem_of(w):
        if kind != "far":
            return None
        for suf, tag in INFLECTIONS:
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                stem = w[: -len(suf)]
                for s in (stem, stem + "e"):
                    if s in in_lexicon and s != w:
                        return s, tag
        return None

    def accept(p):
        if p in used_p:
            return None
        q = probe.unspell(p)
        if q is None or probe.spell(q) != p or q in avoid or q in in_lexicon or q in swap:
            return None
        return q

    pending = sorted(words, key=lambda w: (stem_of(w) is not None, len(w), words.index(w)))
    pseudo = {}
    for w in pending:
        q = None
        st = stem_of(w)
        if st and st[0] in pseudo:
            pos, affix = affixes[st[1]]
            p = affix + pseudo[st[0]] if pos == "prefix" else pseudo[st[0]] + affix
            q = accept(p)
        tries = 0
        while q is None:
            tries += 1
            if tries > 2000:
                raise PipelineError(f"language {source}: cannot draw a pseudo-word for {w!r}")
            length = max(1, min(12, int(round(len(w) * ratio + rng.normal(0, 0.8)))))
            p = model.sample(rng, length, allowed)
            q = accept(p)
        pseudo[w] = probe.spell(q)
        used_p.add(pseudo[w])
        swap[w] = q
        swap[q] = w
    return Language(code=f"syn-{source}", source=source, source_name=stats["name"], resource=resource,
                    kind=kind, script=stats["script"], cased=cased, spelling=spelling, marker=marker,
                    suffixes=suffixes, swap=swap, lexicon_size=len(words), affixes=affixes,
                    articles=articles, cases=cases, genitive_first=genitive)


@lru_cache(maxsize=None)
def _stats_cached() -> dict:
    return load_stats()


def language_stats(source: str) -> dict:
    table = _stats_cached()
    if source not in table:
        raise PipelineError(f"no character statistics for {source!r} in {STATS_FILE.name}; "
                            f"known: {' '.join(sorted(table))}")
    return table[source]
