"""Stage build_tokenizer@<world>: `python -m pipeline.tokenizer <world>` -> models/<world>/tokenizer.

The tokenizer every model of a world shares. Either (`tokenizer: {characters: true}`) a character-level Hugging
Face tokenizer (one token per character, digits included) over the world's vocabulary, or (`tokenizer:
{pretrained: <dir | hub id | pkg:...>, gguf_file: ...}`) a pretrained model's tokenizer, saved in place so that
models trained from scratch in this world share it with that model. Encoding adds <bos> in front; training
appends <eos> to targets.
"""
from __future__ import annotations

from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_dir
from pipeline.params import load_params
from pipeline.stages import tokenizer_dir
from pipeline.worlds import get_world

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]


def build_tokenizer(chars: list[str]):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for c in chars:
        if len(c) != 1:
            raise PipelineError(f"vocabulary entries must be single characters, got {c!r}")
        vocab.setdefault(c, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="left",  # generation pads left; the training collator pads itself
        clean_up_tokenization_spaces=False,
    )


def train_bpe_tokenizer(texts, chars: list[str], vocab_size: int):
    """A byte-pair-encoding tokenizer learnt on `texts` over the world's characters (no <unk> for them): digits
    stay one token each (numbers read digit by digit, as the character tokenizer does), spaces are kept as a
    word-start mark, so decoding gives back the text exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never"),
        pre_tokenizers.Digits(individual_digits=True),
    ])
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="never")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=sorted(set(chars) | {"\u2581"}), limit_alphabet=len(chars) + 1)
    tok.train_from_iterator(texts, trainer=trainer)
    bos = tok.token_to_id("<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>", padding_side="left", clean_up_tokenization_spaces=False)


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    path = Path(path)
    if not (path / "tokenizer.json").exists():
        raise PipelineError(f"missing upstream output {path}: run its stage first (dvc repro)")
    return AutoTokenizer.from_pretrained(str(path))


def world_tokenizer(params: dict, name: str):
    """The tokenizer a world's conf asks for (not yet saved)."""
    tcfg = params["worlds"][name].get("tokenizer") or {}
    chosen = [k for k in ("characters", "bpe", "pretrained") if tcfg.get(k)]
    if len(chosen) > 1:
        raise PipelineError(f"worlds.{name}.tokenizer: give one of characters: true, bpe: {{...}} or pretrained: <model>, "
                            f"not {' and '.join(chosen)}")
    if tcfg.get("bpe"):  # learnt on the world's own training splits (data/<world>/, built before this stage)
        from pipeline.io import read_jsonl

        bcfg = tcfg["bpe"]
        world = get_world(params, name)
        splits = bcfg.get("splits") or []
        if not splits or not bcfg.get("vocab_size"):
            raise PipelineError(f"worlds.{name}.tokenizer.bpe needs vocab_size and splits (the training splits it learns from)")
        texts = (r["prompt"] + r["target"] for s in splits for r in read_jsonl(Path("data") / name / f"{s}.jsonl"))
        return train_bpe_tokenizer(texts, world.vocabulary(params["worlds"][name]["data"]), int(bcfg["vocab_size"]))
    if tcfg.get("characters"):
        world = get_world(params, name)
        return build_tokenizer(world.vocabulary(params["worlds"][name]["data"]))
    if tcfg.get("pretrained"):
        from pipeline.composition.base_models import load_tokenizer as load_pretrained_tokenizer

        tok = load_pretrained_tokenizer(tcfg["pretrained"], tcfg.get("gguf_file"))
        if tok.pad_token is None:  # batched generation and the training collator pad
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"
        return tok
    raise PipelineError(f"worlds.{name}.tokenizer must say characters: true, bpe: {{vocab_size, splits}} or pretrained: <model>")


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.tokenizer <world>")
    params = load_params()
    tok = world_tokenizer(params, argv[0])
    with atomic_dir(tokenizer_dir(argv[0])) as tmp:
        tok.save_pretrained(str(tmp))
    print(f"tokenizer: {len(tok)} tokens -> {tokenizer_dir(argv[0])}")


if __name__ == "__main__":
    main()
