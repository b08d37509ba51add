"""The registry of training kinds. A world's model declares `kind:`; each kind says which models it builds on,
how it builds its starting model and its data, and how the result is saved and loaded again. Training itself
is the one Trainer path (trainer.py) for all of them; `train.steps: 0` saves the starting model untrained.

    base         every weight trains; `init`: random (the `arch`, seeded) | a sibling model | a local directory |
                 a hub id | pkg:<package> (load_causal_lm, as the composition core loads its bases)
    finetune     every weight of an existing model trains (`init` must name one): e.g. the mB+domain skylines
    lora         peft LoRA adapters on an existing model (`init`), the rest frozen; saved as an adapter
    composition  CALM: frozen `anchor` and `augmenting` siblings, `composition:` straight into CALMConfig

Imports of torch/transformers stay inside functions: pipeline/stages.py reads KINDS while composing conf/.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError

KIND_FILE = "pipeline_kind"


@dataclass
class Stage:
    """What a training stage knows: params, which model of which world, its conf block, its seed."""

    params: dict
    world: str
    name: str
    cfg: dict

    @property
    def seed(self) -> int:
        # a model may have its own seed (its init and data order), so a seed sweep of a composition
        # (`dvc exp run -S worlds.kv_arithmetic.models.calm.seed=1`) leaves data and base models as they are
        own = self.cfg.get("seed")
        return self.params["seed"] if own is None else int(own)

    @property
    def runtime(self) -> dict:
        return self.params.get("runtime") or {}

    def sibling_dir(self, name: str) -> Path:
        from pipeline.io import require
        from pipeline.stages import model_dir

        return require(model_dir(self.world, name), "upstream model")

    def is_sibling(self, name) -> bool:
        return isinstance(name, str) and name in self.params["worlds"][self.world]["models"]

    def tokenizer(self):
        from pipeline.tokenizer import load_tokenizer
        from pipeline.stages import tokenizer_dir

        return load_tokenizer(tokenizer_dir(self.world))


class Kind:
    name = ""

    def inputs(self, stage: Stage) -> list[Path]:
        """Files and directories the result depends on (beside its conf): the checkpoint fingerprint covers them."""
        from pipeline.stages import tokenizer_dir, upstream_models

        models = stage.params["worlds"][stage.world]["models"]
        files = [tokenizer_dir(stage.world)] + [stage.sibling_dir(u) for u in upstream_models(stage.world, stage.name, stage.cfg, models)]
        if int(stage.cfg["train"]["steps"]) > 0:
            from pipeline.training.data import data_stems

            files += [Path("data") / stage.world / f"{s}.jsonl" for s in data_stems(stage.cfg)]
        return files

    def build(self, stage: Stage, tokenizer):
        """-> (model, counts): the starting model and what the report should know of it."""
        raise NotImplementedError

    def dataset(self, stage: Stage, tokenizer):
        """-> (dataset, collator, counts)."""
        from pipeline.training.data import Collator, supervised_dataset, training_rows

        rows = training_rows(stage.params, stage.world, stage.name)
        return supervised_dataset(rows, tokenizer), Collator(tokenizer.pad_token_id), {"n_training_rows": len(rows)}

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(str(directory))

    def load(self, directory: Path):
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(str(directory))


def _load_init(stage: Stage, init: str, tokenizer):
    """An existing causal LM: a sibling, a local directory, a hub id or pkg:<package> (one clear line if absent)."""
    from pipeline.composition import load_causal_lm

    source = str(stage.sibling_dir(init)) if stage.is_sibling(init) else init
    model = load_causal_lm(source, stage.cfg.get("init_gguf_file"))
    vocab = model.get_input_embeddings().weight.shape[0]
    if vocab < len(tokenizer):
        raise PipelineError(f"model {stage.world}/{stage.name}: init {init!r} has {vocab} embeddings but the world's "
                            f"tokenizer has {len(tokenizer)} tokens: use the init model's tokenizer for this world")
    return model


class Base(Kind):
    name = "base"
    requires_init = False

    def build(self, stage, tokenizer):
        from transformers import set_seed

        from pipeline.training.architectures import build_base_model

        init = stage.cfg.get("init", "random")
        if init in (None, "random"):
            if self.requires_init:
                raise PipelineError(f"model {stage.world}/{stage.name}: kind {self.name} needs `init`: the model it starts from")
            if not stage.cfg.get("arch"):
                raise PipelineError(f"model {stage.world}/{stage.name}: init random needs an `arch` (conf/model/)")
            set_seed(stage.seed)
            model = build_base_model(stage.cfg["arch"], tokenizer, stage.params["worlds"][stage.world]["max_positions"])
        else:
            set_seed(stage.seed)
            model = _load_init(stage, init, tokenizer)
        return model, {"n_parameters": sum(p.numel() for p in model.parameters())}


class Finetune(Base):
    name = "finetune"
    requires_init = True


class Lora(Kind):
    name = "lora"

    def build(self, stage, tokenizer):
        from peft import LoraConfig, get_peft_model
        from transformers import set_seed

        init = stage.cfg.get("init")
        if init in (None, "random"):
            raise PipelineError(f"model {stage.world}/{stage.name}: kind lora needs `init`: the model the adapters go on")
        lcfg = dict(stage.cfg.get("lora") or {})
        rank = lcfg.get("r")
        if not isinstance(rank, int) or rank < 1:
            raise PipelineError(f"model {stage.world}/{stage.name}: lora.r must be a positive integer, not {rank!r}")
        set_seed(stage.seed)
        base = _load_init(stage, init, tokenizer)
        config = LoraConfig(r=rank, lora_alpha=lcfg.get("alpha", 2 * rank), lora_dropout=lcfg.get("dropout", 0.0),
                            target_modules=lcfg.get("target_modules") or "all-linear", bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(base, config)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        return model, {"n_trainable_parameters": trainable, "n_parameters": sum(p.numel() for p in model.parameters())}

    def save(self, model, directory):
        model.save_pretrained(str(directory))  # the adapter and its config, which names the base's directory

    def load(self, directory):
        from peft import PeftModel

        from pipeline.composition import load_causal_lm

        import json

        base = json.loads((directory / "adapter_config.json").read_text())["base_model_name_or_path"]
        return PeftModel.from_pretrained(load_causal_lm(base), str(directory))


class Composition(Kind):
    name = "composition"

    def build(self, stage, tokenizer):
        from transformers import set_seed

        from pipeline.composition import CALMForCausalLM, load_causal_lm

        for field in ("anchor", "augmenting"):
            if not stage.cfg.get(field):
                raise PipelineError(f"model {stage.world}/{stage.name}: kind composition needs `{field}`")
        set_seed(stage.seed)
        anchor = load_causal_lm(str(stage.sibling_dir(stage.cfg["anchor"])))  # the saved composition names the path
        augmenting = [load_causal_lm(str(stage.sibling_dir(a))) for a in stage.cfg["augmenting"]]
        options = {k: v for k, v in (stage.cfg.get("composition") or {}).items() if v is not None}
        if "connections" in options:
            options["connections"] = [[tuple(pair) for pair in conns] for conns in options["connections"]]
        model = CALMForCausalLM.from_models(anchor=anchor, augmenting=augmenting, **options)
        return model, {"n_composition_parameters": model.num_composition_parameters()}

    def dataset(self, stage, tokenizer):
        from pipeline.training.data import (Collator, anchor_replay_rows, data_stems, supervised_dataset,
                                            world_rows)

        rows = world_rows(stage.world, data_stems(stage.cfg))
        replay = anchor_replay_rows(stage.params, stage.world, stage.cfg, len(rows))
        dataset = supervised_dataset(rows, tokenizer, loss_until=stage.cfg.get("loss_until"))
        if replay:  # loss_until applies to D_C's targets only; replayed rows keep their whole target
            from torch.utils.data import ConcatDataset  # (datasets.concatenate_datasets would dill-hash the features)

            dataset = ConcatDataset([dataset, supervised_dataset(replay, tokenizer)])
        mode = (stage.cfg.get("composition") or {}).get("mode") or "iterative"
        print(f"{stage.world}/{stage.name}: {len(rows)} training rows"
              + (f" + {len(replay)} anchor replay rows" if replay else ""), file=sys.stderr)
        return (dataset, Collator(tokenizer.pad_token_id, augmenting_prompt=mode == "encoder"),
                {"n_training_rows": len(rows), "n_anchor_replay_rows": len(replay)})

    def inputs(self, stage):
        files = super().inputs(stage)
        if float(stage.cfg.get("anchor_replay") or 0) > 0:  # the anchor's own training rows
            from pipeline.training.data import data_stems

            anchor = stage.params["worlds"][stage.world]["models"][stage.cfg["anchor"]]
            files += [Path("data") / stage.world / f"{s}.jsonl" for s in data_stems(anchor)]
        return files

    def load(self, directory):
        from pipeline.composition import CALMForCausalLM

        return CALMForCausalLM.from_pretrained(str(directory))


KINDS: dict[str, Kind] = {k.name: k for k in (Base(), Finetune(), Lora(), Composition())}


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        raise PipelineError(f"unknown training kind {name!r}: one of {', '.join(KINDS)}")
    return KINDS[name]


def load_trained_model(directory: str | Path):
    """A model a training stage wrote (its kind is recorded beside it)."""
    from pipeline.io import require

    directory = require(Path(directory), "upstream model")
    kind_file = directory / KIND_FILE
    kind = kind_file.read_text().strip() if kind_file.exists() else "base"
    return get_kind(kind).load(directory)
