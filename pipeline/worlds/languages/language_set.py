"""The language world's languages (`language_table`, `make_languages`, cached per cfg) and the characters they
write (`vocabulary`)."""
from __future__ import annotations

import json
from functools import lru_cache

from pipeline.errors import PipelineError
from pipeline.worlds.languages.sources import _inputs
from pipeline.worlds.languages.tasks import PRINTABLE
from pipeline.worlds.languages.language_building import build_language, language_stats
from pipeline.worlds.languages.synthetic_language import Language


# ---------------------------------------------------------------- languages


def language_table(cfg: dict) -> list[tuple[str, str, str]]:
    """(source, resource, kind) for every synthetic language of cfg, LRLs first."""
    out, seen = [], set()
    for resource in ("lrl", "hrl"):
        for source, kind in (cfg["languages"].get(resource) or {}).items():
            if source in seen:
                raise PipelineError(f"language {source} is listed twice (a language is LRL or HRL, not both)")
            seen.add(source)
            out.append((source, resource, kind))
    return out


def make_languages(cfg: dict) -> dict[str, Language]:
    """code -> Language for every language of cfg (LRLs first), seeded by cfg['language_seed']."""
    return _make_languages_cached(json.dumps(cfg))  # key order kept: it is the languages' order


@lru_cache(maxsize=4)
def _make_languages_cached(cfg_json: str) -> dict[str, Language]:
    cfg = json.loads(cfg_json)
    inputs = _inputs(cfg)
    settings = cfg["grammar"] | {"lexicon_size": cfg["lexicon_size"]}
    out = {}
    for source, resource, kind in language_table(cfg):
        lang = build_language(source, resource, kind, language_stats(source), inputs["lexicon_words"],
                              inputs["avoid"], settings, int(cfg["language_seed"]))
        out[lang.code] = lang
    return out


def vocabulary(cfg: dict) -> list[str]:
    """Every character the world writes: printable ASCII (English, numbers, the formats) and the letters of
    every language's source statistics, with their capitals (a superset: some letters go unused)."""
    seen = dict.fromkeys(PRINTABLE)
    for source, _, _ in language_table(cfg):
        stats = language_stats(source)
        for c in stats["letters"]:
            seen.setdefault(c)
            if stats["cased"]:
                seen.setdefault(c.upper())
    return list(seen)
