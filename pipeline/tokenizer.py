"""Stage build_tokenizer: `python -m pipeline.tokenizer <world>` -> models/tokenizer.

A character-level Hugging Face tokenizer (one token per character, digits
included) over the world's vocabulary, shared by every model of the world.
Encoding adds <bos> in front; training appends <eos> to targets.
"""
from __future__ import annotations

from pathlib import Path

from pipeline.config import PipelineError, atomic_dir, cli, load_params
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


def load_tokenizer(path: str | Path = "models/tokenizer"):
    from transformers import AutoTokenizer

    path = Path(path)
    if not (path / "tokenizer.json").exists():
        raise PipelineError(f"missing upstream output {path}: run its stage first (dvc repro)")
    return AutoTokenizer.from_pretrained(str(path))


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.tokenizer <world>")
    params = load_params()
    world = get_world(argv[0])
    tok = build_tokenizer(world.vocabulary(params["worlds"][argv[0]]))
    with atomic_dir("models/tokenizer") as tmp:
        tok.save_pretrained(str(tmp))
    print(f"tokenizer: {len(tok)} tokens -> models/tokenizer")


if __name__ == "__main__":
    main()
