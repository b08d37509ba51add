"""A LoRA matched to a composition's parameter count (Table 5's LoRA baseline): the parameters a composition adds
(`composition_added_parameters`, from the architectures it would build) and the rank and target modules that come
within `PARITY_TOLERANCE` of them (`lora_plan`)."""
from __future__ import annotations

from pipeline.errors import PipelineError
from pipeline.tokenization import model_tokenizer
from pipeline.training.architectures import build_base_model
from pipeline.training.lineage import declared_tokenizer
from pipeline.training.vocabulary_fit import _fit_vocabulary


PARITY_TOLERANCE = 0.02  # a LoRA whose rank matches a composition trains within 2% of its added parameters


def _lora_layers(model) -> dict[str, tuple[int, int]]:
    """{module path: (in, out)} of the layers peft's LoRA can adapt: every nn.Linear / GPT-2 Conv1D except the
    output layer (peft's "all-linear" leaves it out too)."""
    from torch import nn
    from transformers.pytorch_utils import Conv1D

    output = model.get_output_embeddings()
    layers = {}
    for path, module in model.named_modules():
        if module is output:
            continue
        if isinstance(module, nn.Linear):
            layers[path] = (module.in_features, module.out_features)
        elif isinstance(module, Conv1D):
            layers[path] = (module.weight.shape[0], module.weight.shape[1])
    return layers


def _built_architecture(params: dict, world: str, name: str, tokenizer, chain=()):
    """A base model with the shape model `name` of `world` has, built from conf alone (nothing trained or read
    from models/): `init: random` builds its `arch`; a sibling init is followed; any other init (a local
    directory, a hub id, pkg:) is loaded, as its training stage would."""
    from pipeline.composition import load_causal_lm

    models = params["worlds"][world]["models"]
    cfg = models[name]
    if name in chain:
        raise PipelineError(f"model {world}/{name}: its init chain loops ({' -> '.join(chain + (name,))})")
    if cfg.get("tokenizer") is not None and cfg.get("kind") != "composition":  # its own, not the world's
        tokenizer = model_tokenizer(cfg["tokenizer"], f"worlds.{world}.models.{name}.tokenizer")
    if cfg.get("kind") == "composition":
        raise PipelineError(f"model {world}/{name} is a composition: it cannot be a composition's base")
    init = cfg.get("init", "random")
    if init in (None, "random"):
        if not cfg.get("arch"):
            raise PipelineError(f"model {world}/{name}: init random needs an `arch` (conf/model/)")
        return build_base_model(cfg["arch"], tokenizer, params["worlds"][world]["max_positions"])
    if init in models:
        return _built_architecture(params, world, init, tokenizer, chain + (name,))
    return _fit_vocabulary(load_causal_lm(init, cfg.get("init_gguf_file")), tokenizer, f"model {world}/{name}: init {init!r}")


def composition_added_parameters(params: dict, world: str, name: str, tokenizer) -> int:
    """The parameters composition `name` of `world` adds (CALMForCausalLM.num_composition_parameters), counted
    on its bases built from conf (`_built_architecture`): built, counted, discarded; no training, no models/."""
    import torch

    from pipeline.composition import CALMForCausalLM

    models = params["worlds"][world]["models"]
    cfg = models.get(name)
    if not cfg or cfg.get("kind") != "composition":
        compositions = [m for m, c in models.items() if c.get("kind") == "composition"]
        raise PipelineError(f"{name!r} is not a composition of world {world} (its compositions: "
                            f"{', '.join(compositions) or 'none'}): a LoRA can match only a composition's added parameters")
    def read_by(base):  # the tokenizer a base reads (declared_tokenizer), from conf
        declared = declared_tokenizer(params, world, base)
        return tokenizer if declared is None else model_tokenizer(declared[1], f"worlds.{world}.models.{declared[0]}.tokenizer")

    with torch.random.fork_rng():  # counting leaves the caller's random state as it was
        anchor_tokenizer = read_by(cfg["anchor"])
        anchor = _built_architecture(params, world, cfg["anchor"], anchor_tokenizer)
        tokenizers = [read_by(a) for a in cfg["augmenting"]]
        augmenting = [_built_architecture(params, world, a, t) for a, t in zip(cfg["augmenting"], tokenizers)]
        options = {k: v for k, v in (cfg.get("composition") or {}).items() if v is not None}
        options.pop("lexical_start", None)  # an initialization of existing parameters: it adds none
        if any(len(t) != len(anchor_tokenizer) for t in tokenizers):  # different tokenizers: composed as training does
            from pipeline.composition import CALMProcessor

            options["processor"] = CALMProcessor(anchor_tokenizer, tokenizers)
        if "connections" in options:
            options["connections"] = [[tuple(pair) for pair in conns] for conns in options["connections"]]
        return CALMForCausalLM.from_models(anchor=anchor, augmenting=augmenting, **options).num_composition_parameters()


def lora_plan(base, budget: int, target_modules=None, tolerance: float = PARITY_TOLERANCE, what: str = "LoRA") -> dict:
    """The rank (and modules) whose trainable count is nearest `budget`, within `tolerance` or refused in one line.

    LoRA of rank r on a layer in->out trains r*(in+out) parameters, so a set of layers trains r*S. With
    `target_modules` given ("all-linear" or a list of module names) only that set is tried; with None, all
    linear layers are tried first and, if no rank gets within the tolerance, the subsets of layer names (q_proj,
    fc1, ...), the one with the most names (then the smallest error) winning: LoRA spread over every kind of
    layer, as is usual, unless parity needs fewer."""
    import itertools

    layers = _lora_layers(base)
    if not layers:
        raise PipelineError(f"{what}: the base model has no linear layers LoRA could adapt")
    leaf = lambda path: path.rsplit(".", 1)[-1]  # noqa: E731
    names = sorted({leaf(p) for p in layers})
    if target_modules in (None, "auto"):
        candidates = [("all-linear", names)] + [(list(s), list(s)) for k in range(len(names) - 1, 0, -1)
                                                 for s in itertools.combinations(names, k)]
    elif target_modules == "all-linear":
        candidates = [("all-linear", names)]
    else:
        wanted = [target_modules] if isinstance(target_modules, str) else list(target_modules)
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            raise PipelineError(f"{what}: lora.target_modules {', '.join(unknown)} name no linear layer of the base "
                                f"(its layers: {', '.join(names)})")
        candidates = [(wanted, wanted)]
    options = []
    for spec, chosen in candidates:
        per_rank = sum(i + o for p, (i, o) in layers.items() if leaf(p) in chosen)
        rank = max(1, round(budget / per_rank))
        trainable = rank * per_rank
        options.append({"r": rank, "target_modules": spec, "trainable": trainable, "budget": budget,
                        "error": (trainable - budget) / budget, "n_names": len(chosen)})
    fits = [o for o in options if abs(o["error"]) <= tolerance]
    if not fits:
        best = min(options, key=lambda o: abs(o["error"]))
        spec = best["target_modules"]
        raise PipelineError(
            f"{what}: no LoRA rank reaches parity with {budget:,} parameters within {100 * tolerance:.0f}% "
            f"(target_modules {spec if isinstance(spec, str) else ', '.join(spec)}: nearest r={best['r']} trains "
            f"{best['trainable']:,}, {100 * best['error']:+.1f}%)"
            + ("; leave lora.target_modules null to let the rank search pick the layers" if target_modules not in (None, "auto") else ""))
    return min(fits, key=lambda o: (-o["n_names"], abs(o["error"])))
