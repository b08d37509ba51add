"""The bytes each token of a tokenizer stands for (`TokenBytes`: byte-level BPE, or SentencePiece with byte
fallback), an augmenting model's tokenizer with the commit rule of alignment.py applied to it (`AugmentingTokenizer`,
`SentencePieceAugmentingTokenizer`), and what a saved composition records of each tokenizer (`tokenizer_record`,
`tokenizer_digest`)."""
from __future__ import annotations

import copy
import hashlib
import json
import re

from .configuration_calm import CompositionConfigError


UNICODE_NORMALIZERS = ("NFC", "NFKC", "NFD", "NFKD")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte <-> printable character table, which byte-level BPE vocabularies are written in."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    characters = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, characters)))


_UNICODE_TO_BYTE = {character: byte for byte, character in _bytes_to_unicode().items()}
_TO_LATIN1 = str.maketrans({character: chr(byte) for character, byte in _UNICODE_TO_BYTE.items()})


class _Digest:
    def __init__(self, tokenizer, role):
        backend = tokenizer.backend_tokenizer
        if _is_unicode_normalizer(_component(backend.normalizer)):
            backend = type(backend).from_str(backend.to_str())  # a copy, without the normalizer
            backend.normalizer = None
        self.value = hashlib.sha256(backend.to_str().encode()).hexdigest()[:16]


def tokenizer_digest(tokenizer) -> str:
    """A short digest of everything that decides a tokenizer's ids in a composition (its tokenizer.json, less a
    Unicode normalizer, which the alignment does not apply: transformers' Qwen2Tokenizer adds NFC to a tokenizer.json
    that has none, and the same tokenizer must not look like another when loaded by another class)."""
    return _prepared(_Digest, tokenizer, "").value


def _is_unicode_normalizer(description: dict) -> bool:
    kinds = [description.get("type")] + [n.get("type") for n in description.get("normalizers", [])]
    return bool(description) and all(kind in UNICODE_NORMALIZERS for kind in kinds)


def tokenizer_record(tokenizer) -> dict:
    """What a saved composition records of a tokenizer: where it came from (if known), its size and its digest."""
    source = getattr(tokenizer, "calm_source", None) or {
        "name_or_path": getattr(tokenizer, "name_or_path", None) or None, "gguf_file": None
    }
    return {**source, "vocab_size": len(tokenizer), "digest": tokenizer_digest(tokenizer)}


def _backend(tokenizer, role: str):
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise CompositionConfigError(f"{role}: a cross-tokenizer composition needs a fast (Rust) tokenizer, "
                                     f"not {type(tokenizer).__name__}")
    return backend


SPACE_PIECE = "\u2581"  # "▁": a SentencePiece vocabulary's space
# byte-fallback tokens: each is one byte of a character the vocabulary lacks
_BYTE_PIECES = {f"<0x{b:02X}>": b for b in range(256)}


def _is_sentencepiece(backend, role: str) -> bool:
    """Whether a tokenizer is SentencePiece-style BPE as the alignment supports it (Gemma 3's form: the normalizer
    writes every space as `▁`, the decoder writes it back, characters outside the vocabulary fall back to their UTF-8
    bytes, nothing is prepended). A SentencePiece tokenizer of another form fails in one line; any other, False."""
    decoder = _component(backend.decoder)
    decoders = decoder.get("decoders", [decoder])
    kinds = [d.get("type") for d in decoders]
    if "ByteFallback" not in kinds and "Metaspace" not in kinds:
        return False
    spaces_back = {"type": "Replace", "pattern": {"String": SPACE_PIECE}, "content": " "}
    normalizer = _component(backend.normalizer)
    normalizers = normalizer.get("normalizers", [normalizer] if normalizer else [])
    pre_tokenizer = _component(backend.pre_tokenizer)
    unsupported = (
        "a Metaspace pre-tokenizer or decoder" if "Metaspace" in kinds or pre_tokenizer.get("type") == "Metaspace"
        else "a dummy prefix (a Prepend normalizer or a Strip decoder, as Llama 2 and Mistral have: the tokens spell a "
             "space the text lacks)" if "Strip" in kinds or any(n.get("type") == "Prepend" for n in normalizers)
        else "no byte fallback" if not getattr(backend.model, "byte_fallback", False)
        else f"a normalizer other than space -> {SPACE_PIECE!r} ({normalizer.get('type')})"
        if [n.get("type") for n in normalizers] != ["Replace"] or normalizers[0].get("pattern") != {"String": " "}
        or normalizers[0].get("content") != SPACE_PIECE
        else f"a decoder that does not write {SPACE_PIECE!r} back as a space" if spaces_back not in decoders
        else f"a pre-tokenizer ({pre_tokenizer.get('type')}) that splits the text"
        if pre_tokenizer and (pre_tokenizer.get("type"), pre_tokenizer.get("pattern")) != ("Split", {"String": " "})
        else None  # Gemma's Split on " " runs after the normalizer has left no space: it never splits
    )
    if unsupported:
        raise CompositionConfigError(f"{role}: a SentencePiece-style tokenizer with {unsupported} is not supported; a "
                                     "cross-tokenizer composition takes byte-level BPE or Gemma 3's form")
    return True


class TokenBytes:
    """The bytes each id of a byte-level BPE or SentencePiece-style tokenizer stands for (`▁` a space, `<0xNN>` one
    byte); special (added) tokens stand for their text."""

    def __init__(self, tokenizer, role: str):
        backend = _backend(tokenizer, role)
        size = max(len(tokenizer), backend.get_vocab_size(with_added_tokens=True))
        table: list[bytes] = [b""] * size
        vocabulary = backend.get_vocab(with_added_tokens=False)
        if _is_sentencepiece(backend, role):
            for token, index in vocabulary.items():
                byte = _BYTE_PIECES.get(token)
                table[index] = bytes([byte]) if byte is not None else token.replace(SPACE_PIECE, " ").encode()
        else:
            decoder = _component(backend.decoder)
            kinds = [decoder.get("type")] + [d.get("type") for d in decoder.get("decoders", [])]
            if "ByteLevel" not in kinds:
                raise CompositionConfigError(
                    f"{role}: a cross-tokenizer composition needs byte-level BPE tokenizers (a ByteLevel decoder, as "
                    f"GPT-2, Llama 3, Qwen2, SmolLM2 have) or SentencePiece-style BPE ones (Gemma 3); this one's "
                    f"decoder is {decoder.get('type')!r}"
                )
            foreign = set("".join(vocabulary)) - _UNICODE_TO_BYTE.keys()
            if foreign:
                raise CompositionConfigError(f"{role}: tokens with characters such as {sorted(foreign)[:3]} are not "
                                             "written in byte-level characters: not a byte-level BPE vocabulary")
            for token, index in vocabulary.items():
                table[index] = token.translate(_TO_LATIN1).encode("latin-1")
        for index, added in tokenizer.added_tokens_decoder.items():
            table[index] = added.content.encode()
        self.table = table

    def __call__(self, index: int) -> bytes:
        """An id past the tokenizer's vocabulary (a model's embedding matrix may be larger) stands for no text."""
        return self.table[index] if index < len(self.table) else b""

    def spans(self, ids, zero_width=frozenset()) -> list[tuple[int, int]]:
        """Byte span of each token on the text the tokens spell; ids in `zero_width` (e.g. a BOS the tokenizer adds
        itself) take no bytes, at the position where they stand."""
        spans, end = [], 0
        for index in ids:
            start = end
            if index not in zero_width:
                end += len(self(index))
            spans.append((start, end))
        return spans


def _component(component) -> dict:
    """A tokenizer component (decoder, normalizer) as its JSON description; {} for none."""
    return json.loads(component.__getstate__()) if component is not None else {}


_PREPARED: dict = {}  # (kind, id(tokenizer), its size) -> (tokenizer, TokenBytes or AugmentingTokenizer)


def _prepared(kind, tokenizer, role: str):
    """One TokenBytes / AugmentingTokenizer per tokenizer object (building one reads the whole vocabulary)."""
    key = (kind.__name__, id(tokenizer), len(tokenizer), role)
    if key not in _PREPARED:
        _PREPARED[key] = (tokenizer, kind(tokenizer, role))  # the tokenizer is kept, so its id is not reused
    return _PREPARED[key][1]


def _added_ids(tokenizer) -> list[int]:
    """Ids the tokenizer puts around a text by itself (BOS, EOS), in front of it."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    without = tokenizer("a", add_special_tokens=False)["input_ids"]
    if with_special[-len(without):] != without:
        raise CompositionConfigError("a cross-tokenizer composition needs a tokenizer that adds special tokens only "
                                     f"in front of a text; this one gives {with_special} for 'a' ({without} without)")
    return with_special[: len(with_special) - len(without)]


class AugmentingTokenizer:
    """mA's tokenizer as the alignment uses it: the stable cut of a pending text, and the tokens before it."""

    def __init__(self, tokenizer, role: str = "augmenting tokenizer"):
        self.tokenizer = tokenizer
        self.role = role
        self.bytes = _prepared(TokenBytes, tokenizer, role)
        backend = _backend(tokenizer, role)
        normalizer = _component(backend.normalizer)
        if normalizer:
            if not _is_unicode_normalizer(normalizer):
                raise CompositionConfigError(
                    f"{role}: its normalizer ({normalizer.get('type')}) changes the text; a cross-tokenizer "
                    f"composition supports none or a Unicode normalization ({', '.join(UNICODE_NORMALIZERS)})"
                )
            backend = copy.deepcopy(backend)
            backend.normalizer = None  # appending text must never change earlier bytes
        if backend.pre_tokenizer is None:
            raise CompositionConfigError(f"{role}: a cross-tokenizer composition needs a tokenizer with a pre-tokenizer")
        self.backend = backend
        self.leading = _added_ids(tokenizer)
        added = sorted({a.content for a in tokenizer.added_tokens_decoder.values() if a.content}, key=len, reverse=True)
        self._added = re.compile("|".join(map(re.escape, added))) if added else None
        probe = "a b\n\u00e9\u4e16"
        if sum(self.encode(probe)[1]) != len(probe.encode()):
            raise CompositionConfigError(f"{role}: its tokens do not spell the text they were made from (a prefix "
                                         "space, or not byte-level); load it with add_prefix_space=False")

    def encode(self, text: str) -> tuple[list[int], list[int]]:
        """mA's ids of `text` (no special tokens added) and the number of bytes of each."""
        ids = self.backend.encode(text, add_special_tokens=False).ids
        return ids, [len(self.bytes(i)) for i in ids]

    def last_chunk_start(self, text: str) -> int:
        """Where (in characters) the last pre-tokenizer chunk of `text` starts; added tokens are chunks of their own."""
        start = 0
        if self._added is not None:
            for match in self._added.finditer(text):
                if match.end() == len(text):
                    return match.start()
                start = match.end()
        piece = text[start:]
        chunks = [span for _, span in self.backend.pre_tokenizer.pre_tokenize_str(piece)]
        if not chunks:
            return start
        last = len(chunks) - 1
        if piece[chunks[last][0] : chunks[last][1]].isspace():
            # Whitespace chunks behind a whitespace tail may still merge with it ("\n", " " + "\n" -> "\n \n"
            # under Qwen2's `\s*[\r\n]+`, " " + " x" under `\s+(?!\S)`): they wait for the next non-space chunk.
            while last > 0 and piece[chunks[last - 1][0] : chunks[last - 1][1]].isspace():
                last -= 1
        return start + chunks[last][0]


class SentencePieceAugmentingTokenizer(AugmentingTokenizer):
    """mA's tokenizer when it is SentencePiece-style BPE (Gemma 3): the whole text is one BPE word, spaces written
    `▁` by the normalizer, added tokens (Gemma's newline runs, HTML tags, turn markers) cut out of it first.

    Where the stable part of a pending text ends. BPE builds tokens only by merging neighbouring symbols of one
    segment, so a position b (between characters b-1 and b) that no token of the vocabulary can span splits every
    tokenization there: the tokens before b are the BPE of the text before b, whatever follows. Whether any token
    can span b is read off its two neighbours: a merge across b would make a token that holds that character pair,
    and the pairs that occur inside tokens are few (Gemma 3: 33,693 pairs; `▁` follows another character only in
    `▁▁` runs and in `>▁</`, so almost every space starts a new token, and ASCII digits never pair). Added tokens are
    cut out of the text (leftmost-longest) before BPE: a complete one is a segment of its own, and a tail of the text
    that may still grow into one (`<start_of_tu`, or a newline before a possible second one) is held back whole. The
    stable cut is the last such position; what lies before it is committed."""

    def __init__(self, tokenizer, role: str = "augmenting tokenizer"):
        self.tokenizer = tokenizer
        self.role = role
        self.bytes = _prepared(TokenBytes, tokenizer, role)  # checks that the tokenizer is of the supported form
        self.backend = _backend(tokenizer, role)  # its normalizer (space -> "▁") maps one character to one: kept
        self.leading = _added_ids(tokenizer)
        added = [a for a in tokenizer.added_tokens_decoder.values() if a.content]
        moving = [a.content for a in added if a.lstrip or a.rstrip or a.single_word
                  or (a.normalized and (" " in a.content or SPACE_PIECE in a.content))]
        if moving:
            raise CompositionConfigError(f"{role}: added tokens such as {moving[0]!r} take in or match the whitespace "
                                         "around them (lstrip/rstrip/single_word, or normalized with a space), which "
                                         "the alignment does not support")
        contents = {a.content for a in added}
        vocabulary = self.backend.get_vocab(with_added_tokens=False)
        # characters of the (normalized) text each id covers; 0 for a byte-fallback token: one byte of one character
        self.widths = [0] * len(self.bytes.table)
        for token, index in vocabulary.items():
            self.widths[index] = 0 if token in _BYTE_PIECES else len(token)
        for index, token in tokenizer.added_tokens_decoder.items():
            self.widths[index] = len(token.content)
        # Character pairs that occur inside a token BPE can make: added tokens are cut out before BPE, and
        # byte-fallback tokens never merge, so neither can span a position of BPE's text.
        self.pairs = frozenset(token[i : i + 2] for token in vocabulary
                               if token not in contents and token not in _BYTE_PIECES
                               for i in range(len(token) - 1))
        self.added = frozenset(contents)
        self.added_lengths = sorted({len(c) for c in contents}, reverse=True)
        self.added_first = frozenset(c[0] for c in contents)
        self.added_prefixes = frozenset(c[:k] for c in contents for k in range(1, len(c)))
        probe = "a b\n\u00e9\u4e16 \u2581x\U0001fae8"  # a literal "▁" (3 bytes, read as a space), byte fallback
        if sum(self.encode(probe)[1]) != len(probe.encode()):
            raise CompositionConfigError(f"{role}: its tokens do not spell the text they were made from")

    def encode(self, text: str) -> tuple[list[int], list[int]]:
        """mA's ids of `text` (no special tokens added) and the number of bytes of each on `text` itself: a `▁` the
        normalizer made of a space is one byte, a literal `▁` three, a byte-fallback token one."""
        ids = self.backend.encode(text, add_special_tokens=False).ids
        lengths, position, partial = [], 0, 0
        for index in ids:
            width = self.widths[index] if index < len(self.widths) else 0
            if width:
                lengths.append(len(text[position : position + width].encode()))
                position += width
            else:
                lengths.append(1)
                partial += 1
                if partial == len(text[position].encode()):
                    position, partial = position + 1, 0
        return ids, lengths

    def _added_spans(self, text: str) -> list[tuple[int, int]]:
        """Where added tokens stand in `text`, found leftmost-longest as the tokenizer finds them."""
        spans, i = [], 0
        while i < len(text):
            length = 0
            if text[i] in self.added_first:
                fits = [n for n in self.added_lengths if i + n <= len(text)]
                length = next((n for n in fits if text[i : i + n] in self.added), 0)
            if length:
                spans.append((i, i + length))
            i += length or 1
        return spans

    def last_chunk_start(self, text: str) -> int:
        """The last position of `text` (in characters) that splits its tokenization whatever text follows."""
        hold = len(text)
        for start in range(max(0, len(text) - self.added_lengths[0] + 1), len(text)) if self.added_lengths else ():
            if text[start:] in self.added_prefixes:  # may still become (part of) an added token
                hold = start
                break
        edges, inside = set(), set()
        for start, end in self._added_spans(text[:hold]):
            edges.update((start, end))
            inside.update(range(start + 1, end))
        for b in range(hold, 0, -1):
            if b in edges:
                return b
            pair = text[b - 1 : b + 1].replace(" ", SPACE_PIECE)
            if b < len(text) and b not in inside and pair not in self.pairs:
                return b
        return 0


def _augmenting_kind(tokenizer, role: str):
    """The AugmentingTokenizer class for a tokenizer's kind."""
    sentencepiece = _is_sentencepiece(_backend(tokenizer, role), role)
    return SentencePieceAugmentingTokenizer if sentencepiece else AugmentingTokenizer
