"""What a model builds on, read from conf alone: the sibling models it starts from or composes, and the tokenizer
it reads. The DAG (pipeline/stages.py), the training kinds and the report's digests all follow these links."""
from __future__ import annotations

from pipeline.errors import PipelineError


def upstream_models(world: str, name: str, cfg: dict, siblings) -> list[str]:
    """The sibling models a model is built from: its init (when that names a sibling), anchor, augmenting."""
    names = []
    init = cfg.get("init")
    if isinstance(init, str) and init in siblings:
        names.append(init)
    if cfg.get("anchor") is not None:
        names.append(cfg["anchor"])
    names += list(cfg.get("augmenting") or [])
    for n in names:
        if n not in siblings:
            raise PipelineError(f"model {world}/{name} builds on {n!r}, which world {world} does not declare "
                                f"(it has {', '.join(siblings)})")
        if n == name:
            raise PipelineError(f"model {world}/{name} builds on itself")
    return names


def tokenizer_parent(cfg: dict):
    """The sibling whose tokenizer a model reads when it declares none: a composition's anchor, else its init."""
    return cfg.get("anchor") if cfg.get("kind") == "composition" else cfg.get("init")


def declared_tokenizer(params: dict, world: str, name: str, chain=()) -> tuple[str, dict] | None:
    """(the model that declares it, its `tokenizer:` block) for the tokenizer model `name` of `world` reads: its own
    `tokenizer:`, else that of the sibling it builds on (its `init`; a composition's `anchor`), and so on; None: the
    world's tokenizer (`worlds.<world>.tokenizer`). A composition declares none: it reads its anchor's."""
    models = params["worlds"][world]["models"]
    cfg = models[name]
    if cfg.get("tokenizer") is not None:
        if cfg.get("kind") == "composition":
            raise PipelineError(f"model {world}/{name}: a composition reads its anchor's tokenizer; give `tokenizer:` "
                                f"to its anchor or augmenting models instead")
        return name, cfg["tokenizer"]
    parent = tokenizer_parent(cfg)
    if isinstance(parent, str) and parent in models and parent != name and parent not in chain:
        return declared_tokenizer(params, world, parent, chain + (name,))
    return None
