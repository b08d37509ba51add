"""Stage build_tokenizer@<world>: `python -m pipeline.tokenizer <world>` -> models/<world>/tokenizer.

The tokenizer every model of a world shares, as the world's conf asks for it (pipeline/tokenization.py: characters,
BPE learnt on the world's training splits, or a pretrained one, restricted or not).
"""
from __future__ import annotations

from pipeline.cli import cli
from pipeline.errors import PipelineError
from pipeline.io import atomic_dir
from pipeline.layout import tokenizer_dir
from pipeline.params import load_params
from pipeline.tokenization import save_tokenizer, world_tokenizer


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise PipelineError("usage: python -m pipeline.tokenizer <world>")
    params = load_params()
    tok = world_tokenizer(params, argv[0])
    with atomic_dir(tokenizer_dir(argv[0])) as tmp:
        save_tokenizer(tok, tmp)
    print(f"tokenizer: {len(tok)} tokens -> {tokenizer_dir(argv[0])}")


if __name__ == "__main__":
    main()
