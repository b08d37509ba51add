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


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    path = Path(path)
    if not (path / "tokenizer.json").exists():
        raise PipelineError(f"missing upstream output {path}: run its stage first (dvc repro)")
    return AutoTokenizer.from_pretrained(str(path))


def world_tokenizer(params: dict, name: str):
    """The tokenizer a world's conf asks for (not yet saved)."""
    tcfg = params["worlds"][name].get("tokenizer") or {}
    if tcfg.get("characters") and tcfg.get("pretrained"):
        raise PipelineError(f"worlds.{name}.tokenizer: give either characters: true or pretrained: <model>, not both")
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
    raise PipelineError(f"worlds.{name}.tokenizer must say characters: true or pretrained: <model>")


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
