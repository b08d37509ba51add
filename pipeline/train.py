"""One training entry for base LMs and for compositions (transformers Trainer).

    python -m pipeline.train base <name>          # params: base_models.<name>  -> models/<name>
    python -m pipeline.train composition <name>   # params: compositions.<name> -> models/<name>

Base models are LlamaForCausalLM built from `arch` (from scratch, or `init`
from another base model's checkpoint).  A composition wraps frozen base models
with pipeline.composition.CALMForCausalLM; only its parameters train.  Loss is
on the answer tokens only (prompt labels are -100; a row with an empty prompt
is general text, loss on every token).

Resumable: Trainer checkpoints go to models/.checkpoints/<name>-<fingerprint>/ (the
fingerprint covers the model's params, the seed, its data and its upstream
models, so a stale checkpoint is never resumed); a rerun after a kill resumes
from the last one (optimizer, scheduler, RNG and data order restored).
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from pipeline.config import (
    PipelineError,
    atomic_dir,
    atomic_write_json,
    cli,
    fingerprint,
    load_params,
    read_jsonl,
    require,
    wandb_enabled,
)
from pipeline.tokenizer import load_tokenizer

CHECKPOINTS = Path("models/.checkpoints")  # not a DVC output; .dvcignore'd, gitignored via /models/*


# ---------------------------------------------------------------- data


class SupervisedDataset:
    """prompt/target rows -> input_ids + labels (-100 on the prompt).

    loss_until: if set, the loss covers each target only up to and including the first occurrence of this
    string (rows without it keep their whole target): e.g. "=" trains a scratchpad KV-MATH target
    "12+34=64" on "12+34=" only."""

    def __init__(self, rows: list[dict], tokenizer, loss_until: str | None = None):
        self.items = []
        eos = tokenizer.eos_token_id
        prompts = tokenizer([r["prompt"] for r in rows])["input_ids"]  # with <bos>
        targets = tokenizer([r["target"] for r in rows], add_special_tokens=False)["input_ids"]
        for r, p, t in zip(rows, prompts, targets):
            ids = p + t + [eos]
            n_prompt = len(p) if r["prompt"] else 1  # general text: predict all but <bos>
            labels = [-100] * n_prompt + ids[n_prompt:]
            if loss_until and loss_until in r["target"]:
                head = r["target"][: r["target"].index(loss_until) + len(loss_until)]
                n_head = len(tokenizer(head, add_special_tokens=False)["input_ids"])
                labels = labels[: len(p) + n_head] + [-100] * (len(ids) - len(p) - n_head)
            self.items.append({"input_ids": ids, "labels": labels, "n_prompt": len(p)})

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class Collator:
    """Right-pads input_ids/labels; with `augmenting_prompt` also passes the prompt alone
    (left-aligned) as augmenting_input_ids, for encoder-mode compositions."""

    def __init__(self, pad_id: int, augmenting_prompt: bool = False):
        self.pad_id = pad_id
        self.augmenting_prompt = augmenting_prompt

    def __call__(self, batch):
        import torch

        n = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), n), self.pad_id, dtype=torch.long)
        labels = torch.full((len(batch), n), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), n), dtype=torch.long)
        for i, b in enumerate(batch):
            L = len(b["input_ids"])
            ids[i, :L] = torch.tensor(b["input_ids"])
            labels[i, :L] = torch.tensor(b["labels"])
            mask[i, :L] = 1
        out = {"input_ids": ids, "attention_mask": mask, "labels": labels}
        if self.augmenting_prompt:
            m = max(b["n_prompt"] for b in batch)
            aids = torch.full((len(batch), m), self.pad_id, dtype=torch.long)
            amask = torch.zeros((len(batch), m), dtype=torch.long)
            for i, b in enumerate(batch):
                L = b["n_prompt"]
                aids[i, m - L :] = torch.tensor(b["input_ids"][:L])
                amask[i, m - L :] = 1
            out["augmenting_input_ids"] = aids
            out["augmenting_attention_mask"] = amask
        return out


# ---------------------------------------------------------------- models


def build_base_model(arch: dict, tokenizer, max_positions: int):
    """A causal LM from scratch:
    - `type: llama`: RoPE, no position in the residual stream;
    - `type: gpt2`: learned absolute position embeddings in the residual stream (which helps the composition
      line mA and mB up), but it adds only at the offsets it was trained at;
    - `type: xglm`: sinusoidal absolute position embeddings in the residual stream (fixed, so a shift in position
      is one linear map for every offset)."""
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, XGLMConfig, XGLMForCausalLM

    kind = arch.get("type", "llama")
    if kind not in ("llama", "gpt2", "xglm"):
        raise PipelineError(f"unknown model type {kind!r}: use llama, gpt2 or xglm")
    h, heads = arch["hidden"], arch["heads"]
    if h % heads:
        raise PipelineError(f"hidden={h} is not divisible by heads={heads}")
    layers, intermediate = arch["layers"], arch.get("intermediate", 4 * h)
    common = dict(
        vocab_size=len(tokenizer),
        tie_word_embeddings=arch.get("tie_embeddings", True),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    if kind == "xglm":
        return XGLMForCausalLM(XGLMConfig(
            max_position_embeddings=max_positions, d_model=h, num_layers=layers, attention_heads=heads,
            ffn_dim=intermediate, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0,
            decoder_start_token_id=tokenizer.bos_token_id, **common,
        ))
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(
            n_positions=max_positions, n_embd=h, n_layer=layers, n_head=heads, n_inner=intermediate,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common,
        ))
    return LlamaForCausalLM(LlamaConfig(
        hidden_size=h, intermediate_size=intermediate, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=heads, max_position_embeddings=max_positions,
        rope_theta=arch.get("rope_theta", 10000.0), attention_dropout=0.0, **common,
    ))


# ---------------------------------------------------------------- training


def _progress_callback():
    from transformers.trainer_callback import ProgressCallback

    class LossProgress(ProgressCallback):
        """tqdm bar with ETA and the latest loss / learning rate in its postfix."""

        def on_log(self, args, state, control, logs=None, **kw):
            if state.is_world_process_zero and self.training_bar is not None and logs:
                post = {k: f"{v:.4g}" for k, v in logs.items() if k in ("loss", "learning_rate", "grad_norm")}
                if post:
                    self.training_bar.set_postfix(post, refresh=False)
                    return
            return super().on_log(args, state, control, logs=logs, **kw)

    return ProgressCallback, LossProgress


def run_trainer(model, dataset, collator, tcfg: dict, seed: int, run_dir: Path, run_name: str, wandb_cfg: dict, extra_config: dict):
    import torch
    from transformers import Trainer, TrainingArguments
    from transformers.trainer_utils import get_last_checkpoint

    use_wandb = wandb_enabled()
    if use_wandb:
        os.environ.setdefault("WANDB_PROJECT", wandb_cfg.get("project", "calm-repro"))
    torch.set_num_threads(int(os.environ.get("CALM_THREADS", tcfg.get("threads", 2))))
    args = TrainingArguments(
        output_dir=str(run_dir),
        max_steps=tcfg["steps"],
        per_device_train_batch_size=tcfg["batch_size"],
        learning_rate=tcfg["lr"],
        weight_decay=tcfg.get("weight_decay", 0.0),
        warmup_steps=int(tcfg.get("warmup_ratio", 0.05) * tcfg["steps"]),
        lr_scheduler_type=tcfg.get("scheduler", "cosine"),
        adam_beta2=tcfg.get("adam_beta2", 0.99),
        max_grad_norm=tcfg.get("max_grad_norm", 1.0),
        logging_steps=tcfg.get("logging_steps", 50),
        save_strategy="steps",
        save_steps=tcfg.get("save_steps", 250),
        save_total_limit=2,
        seed=seed,
        data_seed=seed,
        report_to=["wandb"] if use_wandb else "none",
        run_name=run_name,
        use_cpu=True,
        dataloader_num_workers=0,
        remove_unused_columns=False,
        disable_tqdm=False,
    )
    trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=collator)
    Base, Mine = _progress_callback()
    trainer.remove_callback(Base)
    trainer.add_callback(Mine)
    if use_wandb:
        import wandb

        if wandb.run is None:
            wandb.init(project=os.environ["WANDB_PROJECT"], name=run_name, config=extra_config, reinit="finish_previous")
        else:
            wandb.config.update(extra_config, allow_val_change=True)
    last = get_last_checkpoint(str(run_dir)) if run_dir.exists() else None
    if last:
        print(f"resuming from {last}", file=sys.stderr)
    t0 = time.time()
    result = trainer.train(resume_from_checkpoint=last)
    history = [h for h in trainer.state.log_history if "loss" in h]
    if use_wandb:
        import wandb

        wandb.finish()
    return trainer, {
        "train_loss": result.training_loss,
        "final_logged_loss": history[-1]["loss"] if history else None,
        "steps": trainer.state.global_step,
        "seconds_this_run": round(time.time() - t0, 1),
        "resumed_from": last,
        "loss_history": [(h["step"], h["loss"]) for h in history],
    }


def _world_data(world: str, stem: str) -> list[dict]:
    return read_jsonl(Path("data") / world / f"{stem}.jsonl")


def _stage_config(params: dict, group: str, what: str, name: str) -> dict:
    entries = params.get(group, {})
    if name not in entries:
        raise PipelineError(f"unknown {what} {name!r}: params.yaml declares {', '.join(entries) or 'none'}")
    return entries[name]


def _train_and_save(name, kind, model, dataset, collator, cfg, params, fp, tok, counts: dict, seed: int) -> dict:
    """Train with resumable checkpoints, then write models/<name> atomically and drop the checkpoints."""
    run_dir = CHECKPOINTS / f"{name}-{fp}"
    trainer, info = run_trainer(
        model, dataset, collator, cfg["train"], seed, run_dir, name, params.get("wandb", {}),
        {"pipeline": {"kind": kind, "name": name, **cfg}, "seed": seed, **counts},
    )
    with atomic_dir(Path("models") / name) as tmp:
        trainer.model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        (tmp / "pipeline_kind").write_text(f"{kind}\n")
        atomic_write_json(tmp / "train_info.json", {**counts, **info})
    shutil.rmtree(run_dir, ignore_errors=True)
    return info


def _data_stems(cfg: dict) -> list[str]:
    return cfg["data"] if isinstance(cfg["data"], list) else [cfg["data"]]


def base_training_rows(name: str, params: dict) -> list[dict]:
    """The prompt/target rows base model <name> trains on, prefixes included (see prefix_fraction)."""
    cfg = _stage_config(params, "base_models", "base model", name)
    world = cfg["world"]
    rows = [r for s in _data_stems(cfg) for r in _world_data(world, s)]
    frac = float(cfg.get("prefix_fraction") or 0.0)
    if frac > 0:  # shift a fraction of the prompts behind a value-free KV-MATH-shaped prefix
        from pipeline.worlds import get_world

        k = int(round(frac * len(rows)))
        prefixes = get_world(world).random_prefixes(params["worlds"][world], k, params["seed"] + 1, Path("data") / world)
        rows = [dict(r, prompt=p + r["prompt"]) for r, p in zip(rows[:k], prefixes)] + rows[k:]
    return rows


def anchor_replay_rows(cfg: dict, params: dict, n_composition_rows: int) -> list[dict]:
    """Rows of the anchor's own training data mixed into D_C (`anchor_replay`: their fraction of the mix).

    They carry no key of D_KV, so D_C still holds no held-out key; they show the composition positions where
    mA has nothing to add (the anchor's own task), which keeps the anchor's skill intact (paper Table 1: CALM
    keeps mB's NUM-MATH). Drawn with a seeded generator: same seed, same rows."""
    import random

    frac = float(cfg.get("anchor_replay") or 0.0)
    if frac <= 0:
        return []
    if frac >= 1:
        raise PipelineError(f"anchor_replay must be in [0, 1), got {frac}")
    pool = base_training_rows(cfg["anchor"], params)
    k = int(round(frac / (1 - frac) * n_composition_rows))
    rng = random.Random(params["seed"] + 2)
    return [pool[rng.randrange(len(pool))] for _ in range(k)]


def train_base(name: str, params: dict) -> dict:
    from transformers import AutoModelForCausalLM, set_seed

    cfg = _stage_config(params, "base_models", "base model", name)
    seed = params["seed"]
    tok = load_tokenizer()
    world = cfg["world"]
    stems = _data_stems(cfg)
    rows = base_training_rows(name, params)
    init = cfg.get("init", "tokenizer")
    init = None if init in (None, "tokenizer", "scratch") else init
    upstream = [Path("data") / world / f"{s}.jsonl" for s in stems] + [Path("models/tokenizer")]
    if init:
        upstream.append(require(Path("models") / init, "upstream model"))
    fp = fingerprint({"name": name, "cfg": cfg, "seed": seed}, upstream)
    set_seed(seed)
    if init:
        model = AutoModelForCausalLM.from_pretrained(str(Path("models") / init))
    else:
        model = build_base_model(cfg["arch"], tok, params["max_positions"])
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {n_params/1e6:.3f}M parameters, {len(rows)} training rows, init={init or 'scratch'}", file=sys.stderr)
    return _train_and_save(
        name, "base", model, SupervisedDataset(rows, tok), Collator(tok.pad_token_id), cfg, params, fp, tok,
        {"n_parameters": n_params}, seed,
    )


def train_composition(name: str, params: dict) -> dict:
    from transformers import set_seed

    cfg = _stage_config(params, "compositions", "composition", name)
    # a composition may have its own seed (its init and data order), so a seed sweep of the composition
    # (`dvc exp run -S compositions.calm.seed=1`) leaves data and base models as they are
    seed = params["seed"] if cfg.get("seed") is None else int(cfg["seed"])
    tok = load_tokenizer()
    world = cfg["world"]
    rows = _world_data(world, cfg["data"])
    anchor_dir = require(Path("models") / cfg["anchor"], "upstream model")
    aug_dirs = [require(Path("models") / a, "upstream model") for a in cfg["augmenting"]]
    replay = anchor_replay_rows(cfg, params, len(rows))
    replay_files = []
    if replay:
        anchor_cfg = _stage_config(params, "base_models", "base model", cfg["anchor"])
        replay_files = [Path("data") / anchor_cfg["world"] / f"{s}.jsonl" for s in _data_stems(anchor_cfg)]
    fp = fingerprint(
        {"name": name, "cfg": cfg, "seed": seed, "anchor": params["base_models"].get(cfg["anchor"])},
        [Path("data") / world / f"{cfg['data']}.jsonl", anchor_dir, *aug_dirs, *replay_files],
    )
    from pipeline.composition import CALMForCausalLM, load_causal_lm

    set_seed(seed)
    anchor = load_causal_lm(str(anchor_dir))  # records the path, which the saved composition names
    augmenting = [load_causal_lm(str(d)) for d in aug_dirs]
    connections = cfg.get("connections")
    if connections is not None:
        connections = [[tuple(c) for c in conns] for conns in connections]
    # the core's own options, passed through as conf/ sets them (null or absent: the core's default)
    options = ("num_heads", "rotary", "final_norm", "attention_dropout", "augmenting_dropout")
    kwargs = {option: cfg[option] for option in options if cfg.get(option) is not None}
    model = CALMForCausalLM.from_models(
        anchor=anchor, augmenting=augmenting, connections=connections, mode=cfg.get("mode", "iterative"), **kwargs
    )
    n_comp = model.num_composition_parameters()
    print(
        f"{name}: {n_comp/1e6:.3f}M composition parameters, {len(rows)} training rows"
        + (f" + {len(replay)} anchor replay rows" if replay else ""),
        file=sys.stderr,
    )
    collator = Collator(tok.pad_token_id, augmenting_prompt=cfg.get("mode", "iterative") == "encoder")
    dataset = SupervisedDataset(rows, tok, loss_until=cfg.get("loss_until"))
    if replay:  # loss_until applies to D_C's targets only; replayed rows keep their whole target
        from torch.utils.data import ConcatDataset

        dataset = ConcatDataset([dataset, SupervisedDataset(replay, tok)])
    return _train_and_save(
        name, "composition", model, dataset, collator, cfg, params, fp, tok,
        {"n_composition_parameters": n_comp, "n_training_rows": len(rows), "n_anchor_replay_rows": len(replay)}, seed,
    )


@cli
def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] not in ("base", "composition"):
        raise PipelineError("usage: python -m pipeline.train {base|composition} <name>")
    params = load_params()
    info = (train_base if argv[0] == "base" else train_composition)(argv[1], params)
    print(f"{argv[1]}: train_loss={info['train_loss']:.4f} steps={info['steps']} ({info['seconds_this_run']} s)")


if __name__ == "__main__":
    main()
