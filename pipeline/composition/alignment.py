r"""Composing models whose tokenizers differ: which augmenting tokens each anchor token may read.

Both models read one text: the bytes of the anchor's tokens, in order. Every token of both models gets a byte span
on it, computed from the bytes each token stands for (byte-level BPE tokenizers split UTF-8 characters, and their
character offsets then overlap, so the tokenizers' own offsets are not used).

The causal rule (docs: README, "Composing models with different tokenizers"). mA's tokens are *committed* one anchor
token at a time, exactly as decoding has to: after anchor token t, the text past mA's last committed token (the
`pending` text) is split by mA's pre-tokenizer, and mA's tokens of the pending text that end at or before the start
of its last chunk are committed (they are stable: text appended later can only change the last chunk; when that
chunk is whitespace, the whitespace chunks right before it wait too, since a regex such as `\s*[\r\n]+` may still
merge them with it). Anchor token t reads exactly the mA tokens committed so far. They are a function of the text
up to the end of t, computed by the same code in training (`CALMProcessor.align`, the whole text at once) and in decoding
(`IncrementalAlignment.push`, one anchor token at a time), so both see the same thing by construction; mA's cache is
never cropped or recomputed. The committed tokens are mA's own tokenization of the whole text (the tests check this
for every cut of code and multilingual text, and it held on 120 stdlib files in both directions, SmolLM2 <-> Qwen2);
should some pre-tokenizer's chunks change further back, training would still equal decoding, and mA would read a
tokenization of its own text that differs there.

Visibility is monotone (a prefix of mA's committed tokens), so one number per anchor token says it all:
`augmenting_visible[b, t]` = how many of row b's mA tokens anchor token t may read.

Supported: byte-level BPE tokenizers (GPT-2 style, `ByteLevel` decoder: SmolLM2, Qwen2, Llama 3, GPT-2, ...), with
no normalizer or a Unicode normalization one (NFC, NFKC: dropped for the alignment, so that appending text never
changes earlier bytes; text already in that form, nearly all text, tokenizes the same); and SentencePiece-style BPE
tokenizers with byte fallback and no dummy prefix (Gemma 3: a space is `▁`, a character outside the vocabulary is
its UTF-8 bytes as `<0xNN>` tokens; `SentencePieceBytes`, `SentencePieceAugmentingTokenizer`). Such a tokenizer has
no pre-tokenizer to say where the last chunk starts: BPE merges symbols inside one text, so the rule there asks the
vocabulary instead (a merge across a position would make a token that holds the two characters around it).
"""

from __future__ import annotations

import codecs
import copy
import hashlib
import json
import re
from dataclasses import dataclass

from .configuration_calm import CompositionConfigError, CompositionInputError

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


class IncrementalAlignment:
    """One row of one mA: anchor tokens' bytes in, mA's newly committed tokens out (the rule in the module doc)."""

    def __init__(self, augmenting: AugmentingTokenizer):
        self.augmenting = augmenting
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")  # holds back a character's first bytes
        self.pending = ""  # decoded text after the last committed mA token
        self.ids: list[int] = list(augmenting.leading)  # committed mA ids (a BOS mA adds itself first)
        self.ends: list[int] = [0] * len(self.ids)  # byte end of each, on mA's text
        self.visible: list[int] = []  # per anchor token pushed: number of committed mA tokens
        self._committed_bytes = 0
        self._unfed = list(self.ids)  # the BOS is committed from the start: the first push hands it to mA too

    def push(self, data: bytes) -> list[int]:
        """Append one anchor token's bytes (b"" for a padding or zero-width token); return the mA ids it commits."""
        new: list[int] = []
        if data:
            self.pending += self._decoder.decode(data)
            cut = self.augmenting.last_chunk_start(self.pending) if self.pending else 0
            if cut > 0:
                limit = len(self.pending[:cut].encode())
                ids, lengths = self.augmenting.encode(self.pending)
                end = 0
                for index, length in zip(ids, lengths):
                    if end + length > limit:
                        break
                    end += length
                    new.append(index)
                    self.ends.append(self._committed_bytes + end)
                if end != limit:
                    raise CompositionConfigError(
                        f"{self.augmenting.role}: its tokens do not spell the text {self.pending[:cut]!r} they were "
                        "made from (not a byte-exact tokenizer)"
                    )
                self._committed_bytes += limit
                self.pending = self.pending[cut:]
                self.ids += new
        self.visible.append(len(self.ids))
        new, self._unfed = self._unfed + new, []
        return new


@dataclass
class Alignment:
    """One mA's side of a batch: its committed ids per row and, per anchor token, how many of them it may read."""

    ids: list[list[int]]
    visible: list[list[int]]
    ends: list[list[int]]  # byte end of each mA token on the text

    def tensors(self, pad_id: int, anchor_length: int | None = None):
        """Right-padded [B, S] ids and mask, and [B, T] visible counts (padding rows of the anchor repeat the last)."""
        import torch

        rows = len(self.ids)
        width = max((len(r) for r in self.ids), default=0)
        length = anchor_length if anchor_length is not None else max((len(v) for v in self.visible), default=0)
        ids = torch.full((rows, width), pad_id, dtype=torch.long)
        mask = torch.zeros((rows, width), dtype=torch.long)
        visible = torch.zeros((rows, length), dtype=torch.long)
        for row, (tokens, counts) in enumerate(zip(self.ids, self.visible)):
            ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            mask[row, : len(tokens)] = 1
            visible[row, : len(counts)] = torch.tensor(counts, dtype=torch.long)
            if counts and len(counts) < length:
                visible[row, len(counts) :] = counts[-1]
        return ids, mask, visible


class CALMProcessor:
    """The tokenizers of a cross-tokenizer composition: the anchor's, and one per augmenting model.

    `processor(texts)` tokenizes for the anchor and aligns each mA (input_ids, attention_mask, augmenting_input_ids,
    augmenting_attention_mask, augmenting_visible); `processor.align(input_ids)` aligns given anchor ids (what a
    training collator and `CALMForCausalLM` use). With one mA the augmenting entries are tensors; with several, lists
    of tensors, one per mA.
    """

    def __init__(self, anchor_tokenizer, augmenting_tokenizers):
        single = not isinstance(augmenting_tokenizers, (list, tuple))
        augmenting_tokenizers = [augmenting_tokenizers] if single else list(augmenting_tokenizers)
        if not augmenting_tokenizers:
            raise CompositionConfigError("CALMProcessor needs at least one augmenting tokenizer")
        self.anchor_tokenizer = anchor_tokenizer
        self.augmenting_tokenizers = augmenting_tokenizers
        self.anchor_bytes = _prepared(TokenBytes, anchor_tokenizer, "anchor tokenizer")
        self.anchor_zero_width = frozenset(_added_ids(anchor_tokenizer))  # a BOS the anchor adds is no text
        self.augmenting = [
            _prepared(_augmenting_kind(t, f"augmenting tokenizer {i}"), t, f"augmenting tokenizer {i}")
            for i, t in enumerate(augmenting_tokenizers)
        ]
        self.augmenting_pad_ids = [_pad_id(t) for t in augmenting_tokenizers]
        self.anchor_pad_id = _pad_id(anchor_tokenizer)

    # ----- records ----------------------------------------------------------------------------------------------
    def records(self) -> tuple[dict, list[dict]]:
        return tokenizer_record(self.anchor_tokenizer), [tokenizer_record(t) for t in self.augmenting_tokenizers]

    # ----- the anchor's text ------------------------------------------------------------------------------------
    def token_bytes(self, index: int) -> bytes:
        return b"" if index in self.anchor_zero_width else self.anchor_bytes(index)

    def anchor_spans(self, ids) -> list[tuple[int, int]]:
        """Byte span of each anchor token on the shared text."""
        return self.anchor_bytes.spans(ids, self.anchor_zero_width)

    # ----- alignment --------------------------------------------------------------------------------------------
    def start(self, rows: int) -> list[list[IncrementalAlignment]]:
        """Decoding state: per mA, one IncrementalAlignment per row."""
        return [[IncrementalAlignment(a) for _ in range(rows)] for a in self.augmenting]

    def push(self, state, input_ids, attention_mask=None) -> list[list[list[int]]]:
        """Feed new anchor tokens [B, n] (mask 0 = padding, no text) to a decoding state; per mA, per row, the
        mA ids they commit."""
        ids = _as_rows(input_ids)
        mask = _as_rows(attention_mask) if attention_mask is not None else [[1] * len(r) for r in ids]
        new = [[[] for _ in ids] for _ in self.augmenting]
        for row, (tokens, keep) in enumerate(zip(ids, mask)):
            data = [self.token_bytes(i) if k else b"" for i, k in zip(tokens, keep)]
            for a, rows in enumerate(state):
                for chunk in data:
                    new[a][row] += rows[row].push(chunk)
        return new

    def align(self, input_ids, attention_mask=None) -> list[Alignment]:
        """Align whole rows of anchor ids (training, or decoding without a cache): one Alignment per mA."""
        ids = _as_rows(input_ids)
        if any(i < 0 for r in ids for i in r):
            raise CompositionInputError("anchor ids must be non-negative integers (ids past the anchor tokenizer's "
                                        "vocabulary stand for no text)")
        state = self.start(len(ids))
        self.push(state, ids, attention_mask)
        return [Alignment([r.ids for r in rows], [r.visible for r in rows], [r.ends for r in rows]) for rows in state]

    def augmenting_inputs(self, input_ids, attention_mask=None) -> dict:
        """The forward() keywords for the augmenting models: tensors for one mA, lists of tensors for several."""
        length = len(_as_rows(input_ids)[0]) if len(_as_rows(input_ids)) else 0
        parts = [a.tensors(pad, length) for a, pad in zip(self.align(input_ids, attention_mask), self.augmenting_pad_ids)]
        names = ("augmenting_input_ids", "augmenting_attention_mask", "augmenting_visible")
        out = {name: [p[k] for p in parts] for k, name in enumerate(names)}
        return {k: v[0] for k, v in out.items()} if len(parts) == 1 else out

    def __call__(self, text, *, add_special_tokens: bool = True, padding_side: str = "right", return_tensors="pt"):
        """Tokenize text (a string or a list) for the anchor, padded on `padding_side`, and align every mA."""
        from transformers import BatchEncoding

        if return_tensors != "pt":
            raise CompositionInputError("CALMProcessor returns PyTorch tensors only (return_tensors='pt')")
        ids, mask = self.anchor_batch(text, add_special_tokens=add_special_tokens, padding_side=padding_side)
        return BatchEncoding({"input_ids": ids, "attention_mask": mask, **self.augmenting_inputs(ids, mask)})

    def anchor_batch(self, text, *, add_special_tokens: bool = True, padding_side: str = "right"):
        """The anchor's ids [B, T] and attention mask of a string or a list of strings, padded on `padding_side`."""
        import torch

        texts = [text] if isinstance(text, str) else list(text)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise CompositionInputError("CALMProcessor needs a string or a non-empty list of strings")
        if padding_side not in ("left", "right"):
            raise CompositionInputError(f"padding_side must be 'left' or 'right', not {padding_side!r}")
        rows = self.anchor_tokenizer(texts, add_special_tokens=add_special_tokens)["input_ids"]
        if any(len(r) == 0 for r in rows):
            raise CompositionInputError("an empty text gives the anchor no tokens: every text needs at least one")
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), self.anchor_pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, tokens in enumerate(rows):
            where = slice(width - len(tokens), width) if padding_side == "left" else slice(0, len(tokens))
            ids[row, where] = torch.tensor(tokens)
            mask[row, where] = 1
        return ids, mask

    def save_pretrained(self, directory):
        """anchor_tokenizer/ and augmenting_tokenizer_<i>/ under `directory` (a saved composition holds them)."""
        from pathlib import Path

        self.anchor_tokenizer.save_pretrained(Path(directory) / "anchor_tokenizer")
        for i, t in enumerate(self.augmenting_tokenizers):
            t.save_pretrained(Path(directory) / f"augmenting_tokenizer_{i}")

    @classmethod
    def from_pretrained(cls, directory) -> "CALMProcessor":
        """The processor that save_pretrained wrote under `directory`."""
        from pathlib import Path

        from transformers import AutoTokenizer

        directory = Path(directory)
        count = sum(1 for _ in directory.glob("augmenting_tokenizer_*"))
        if not (directory / "anchor_tokenizer").is_dir() or count == 0:
            raise CompositionConfigError(f"{directory} holds no saved CALMProcessor (anchor_tokenizer/ and "
                                         "augmenting_tokenizer_0/, ...)")
        load = AutoTokenizer.from_pretrained
        return cls(load(directory / "anchor_tokenizer"),
                   [load(directory / f"augmenting_tokenizer_{i}") for i in range(count)])


def _pad_id(tokenizer) -> int:
    for name in ("pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None:
            return int(value)
    return 0


def _as_rows(values) -> list[list[int]]:
    if hasattr(values, "tolist"):
        values = values.tolist()
    if values and isinstance(values[0], int):
        values = [values]
    return [list(map(int, r)) for r in values]
