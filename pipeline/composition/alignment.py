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

Each token's bytes and the rule applied to one tokenizer (`TokenBytes`, `AugmentingTokenizer` and its
SentencePiece variant, the tokenizer records a saved composition keeps): token_bytes.py. Here: the alignment of
whole texts (`CALMProcessor.align`) and of a decoding step (`IncrementalAlignment`).
"""
from __future__ import annotations

import codecs
import copy
from dataclasses import dataclass

from .configuration_calm import CompositionConfigError, CompositionInputError
from .token_bytes import AugmentingTokenizer, TokenBytes, _added_ids, _augmenting_kind, _prepared, tokenizer_record
from .token_bytes import tokenizer_digest  # noqa: F401 (imported from here)


class IncrementalAlignment:
    """One row of one mA: anchor tokens' bytes in, mA's newly committed tokens out (the rule in the module doc)."""

    def __init__(self, augmenting: AugmentingTokenizer, pending: bool = False):
        self.augmenting = augmenting
        self.track_pending = pending  # read_pending: also keep, per anchor token, mA's ids of the pending text
        self.tails: list[list[int]] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")  # holds back a character's first bytes
        self.pending = ""  # decoded text after the last committed mA token
        self.ids: list[int] = list(augmenting.leading)  # committed mA ids (a BOS mA adds itself first)
        self.ends: list[int] = [0] * len(self.ids)  # byte end of each, on mA's text
        self.visible: list[int] = []  # per anchor token pushed: number of committed mA tokens
        self._committed_bytes = 0
        self._unfed = list(self.ids)  # the BOS is committed from the start: the first push hands it to mA too

    def copy(self) -> "IncrementalAlignment":
        """An independent copy of this row's state (beam search continues one row as several beams); the tokenizer
        is shared, it is only read."""
        other = copy.copy(self)
        other.tails, other.ids, other.ends = list(self.tails), list(self.ids), list(self.ends)
        other.visible, other._unfed = list(self.visible), list(self._unfed)
        other._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        other._decoder.setstate(self._decoder.getstate())  # the first bytes of a character still held back
        return other

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
        if self.track_pending:  # mA's tokens of the text after its committed ones, as it would tokenize them now
            self.tails.append(self.augmenting.encode(self.pending)[0] if data and self.pending else [])
        new, self._unfed = self._unfed + new, []
        return new


@dataclass
class Alignment:
    """One mA's side of a batch: its committed ids per row and, per anchor token, how many of them it may read."""

    ids: list[list[int]]
    visible: list[list[int]]
    ends: list[list[int]]  # byte end of each mA token on the text
    tails: list[list[list[int]]] | None = None  # read_pending: per row, per anchor token, mA's ids of its pending text

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


@dataclass
class PendingLayout:
    """One mA's slots for a `read_pending` step, per row in the order the anchor's tokens make them: for each anchor
    token of the step, the mA tokens it commits, then the tokens of its *tail* (mA's tokens of the text after the
    committed ones, as mA tokenizes it at that token). All [B, S] but `ancestors`, `frontier` and `positions`.

    The slots form a tree (a trie of mA token sequences): a slot is a token after its parent slot, and its state
    depends only on that path, so a path made twice is computed once. A tail is most often committed a token or two
    later as it was (88% of the tails of MBPP's prompts and answers, SmolLM2 over Qwen2.5): the committed token then
    IS the tail's slot, and a training row's mA runs ~1.15 times its tokens rather than ~2.2. Each slot is made when
    the first anchor token that needs it is pushed, and padding comes last, so the slots anchor token t reads sit at
    the same indices whatever text follows t (the logits stay bitwise the same). Each slot reads its path (its
    `ancestors`, itself included); anchor token t reads the committed tokens before the step and the path to its
    `frontier` (its tail's last slot, else its last committed one), so its rotary position is one past that."""

    ids: "torch.Tensor"
    real: "torch.Tensor"  # bool: a slot, not padding
    ordinal: "torch.Tensor"  # the slot's position among mA's tokens on its path (its rotary position)
    committed: "torch.Tensor"  # bool: on the row's committed path (later steps read it), else a tail's only
    ancestors: "torch.Tensor"  # [B, S, S] bool: slot k is on slot q's path (k == q included; padding sees itself)
    frontier: "torch.Tensor"  # [B, T] the step's last slot that each anchor token reads, -1: none in this step
    positions: "torch.Tensor"  # [B, T] each anchor token's rotary position: visible + the length of its tail


def pending_layout(committed, first_ordinal, visible, tails, pad_id: int, length: int,
                   share: bool = True) -> PendingLayout:
    """Per row: `committed` new mA ids (their ordinals start at `first_ordinal`), `visible` committed counts and `tails`
    of the step's anchor tokens (an anchor padding position past a row's end repeats its last count, with no tail).
    `share=False` gives every tail token a slot of its own (the same states, computed again: a reference)."""
    import torch

    rows, frontiers, positions = [], [], []
    for row, ids in enumerate(committed):
        first, counts = first_ordinal[row], list(visible[row])
        counts += [counts[-1] if counts else first] * (length - len(counts))
        slots = {"ids": [], "ordinal": [], "parent": [], "committed": []}
        made: dict[tuple[int, int], int] = {}  # (parent slot, mA id) -> slot

        def slot(parent: int, index: int, ordinal: int, reuse: bool) -> int:
            if reuse and (parent, index) in made:
                return made[(parent, index)]
            made[(parent, index)] = len(slots["ids"])
            for name, value in zip(slots, (index, ordinal, parent, False)):
                slots[name].append(value)
            return len(slots["ids"]) - 1

        path: list[int] = []  # the step's committed tokens' slots, by ordinal
        row_frontier, row_positions = [], []
        for t, count in enumerate(counts):
            for ordinal in range(first + len(path), count):  # the tokens anchor token t commits
                path.append(slot(path[-1] if path else -1, ids[ordinal - first], ordinal, reuse=share))
                slots["committed"][path[-1]] = True
            end = path[-1] if path else -1
            tail = tails[row][t] if t < len(tails[row]) else []
            for j, index in enumerate(tail):
                end = slot(end, index, count + j, reuse=share)
            row_frontier.append(end)
            row_positions.append(count + len(tail))
        rows.append(slots)
        frontiers.append(row_frontier)
        positions.append(row_positions)
    batch, width = len(rows), max((len(r["ids"]) for r in rows), default=0)
    columns = {name: torch.tensor([r[name] + [default] * (width - len(r[name])) for r in rows], dtype=dtype).reshape(
        batch, width) for name, default, dtype in (("ids", pad_id, torch.long), ("ordinal", 0, torch.long),
                                                  ("parent", -1, torch.long), ("committed", False, torch.bool))}
    real = torch.arange(width)[None, :] < torch.tensor([len(r["ids"]) for r in rows], dtype=torch.long)[:, None]
    ancestors = torch.eye(width, dtype=torch.bool).repeat(batch, 1, 1)
    every_row = torch.arange(batch)
    for q in range(width):  # a parent is made before its children
        parent = columns["parent"][:, q]
        ancestors[:, q] |= ancestors[every_row, parent.clamp(min=0)] & (parent >= 0)[:, None]
    return PendingLayout(ids=columns["ids"], real=real, ordinal=columns["ordinal"], committed=columns["committed"],
                         ancestors=ancestors,
                         frontier=torch.tensor(frontiers, dtype=torch.long).reshape(batch, length),
                         positions=torch.tensor(positions, dtype=torch.long).reshape(batch, length))


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
    def start(self, rows: int, pending: bool = False) -> list[list[IncrementalAlignment]]:
        """Decoding state: per mA, one IncrementalAlignment per row (`pending`: each also keeps its tails)."""
        return [[IncrementalAlignment(a, pending) for _ in range(rows)] for a in self.augmenting]

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

    def align(self, input_ids, attention_mask=None, pending: bool = False) -> list[Alignment]:
        """Align whole rows of anchor ids (training, or decoding without a cache): one Alignment per mA (with
        `pending`, also each anchor token's tail: mA's ids of the text after its committed tokens)."""
        ids = _as_rows(input_ids)
        if any(i < 0 for r in ids for i in r):
            raise CompositionInputError("anchor ids must be non-negative integers (ids past the anchor tokenizer's "
                                        "vocabulary stand for no text)")
        state = self.start(len(ids), pending)
        self.push(state, ids, attention_mask)
        return [Alignment([r.ids for r in rows], [r.visible for r in rows], [r.ends for r in rows],
                          [r.tails for r in rows] if pending else None) for rows in state]

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
