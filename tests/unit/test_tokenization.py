"""A world's learnt BPE tokenizer (`tokenizer: {bpe: ...}`) gives back every text exactly, reads digits one by one
(numbers are read as the character tokenizer reads them), and never needs <unk> for the world's characters."""
import random

from pipeline.tokenization import train_bpe_tokenizer

CHARS = [chr(c) for c in range(32, 127)] + list("éôüßçñ") + [chr(c) for c in range(0x0915, 0x0939)] + [chr(c) for c in range(0x0E01, 0x0E2E)]


def _texts(rng, n):
    words = ["".join(rng.choice(CHARS[33:]) for _ in range(rng.randint(1, 7))) for _ in range(300)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def test_bpe_round_trips_keeps_digits_single_and_has_no_unknowns():
    rng = random.Random(0)
    tok = train_bpe_tokenizer(_texts(rng, 2000), CHARS, vocab_size=600)
    assert len(tok) == 600
    unk = tok.convert_tokens_to_ids("<unk>")
    for text in _texts(random.Random(1), 300) + ["  two  spaces ", "123 + 4567 = 4690", "<syn-lij> a = b"]:
        ids = tok(text)["input_ids"]
        assert ids[0] == tok.bos_token_id and unk not in ids
        assert tok.decode(ids[1:]) == text
    pieces = tok.convert_ids_to_tokens(tok("x 4690 y")["input_ids"])
    assert [p.lstrip("\u2581") for p in pieces if p.lstrip("\u2581").isdigit()] == ["4", "6", "9", "0"]
    # the merges are learnt: frequent pieces become single tokens (shorter than characters)
    sample = _texts(random.Random(0), 50)
    assert sum(len(tok(t)["input_ids"]) for t in sample) < 0.8 * sum(len(t) for t in sample)
