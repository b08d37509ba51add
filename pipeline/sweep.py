"""Ablation sweeps (paper §4.4, Table 5) as a Hydra multirun: variants x seeds, one job each.

    python -m pipeline.sweep -m ablation=calm,vanilla_mA,random_mA,encoder,lora,skyline seed=0,1,2
    python -m pipeline.sweep -m ablation=calm,encoder 'seed=range(1,3)' sweep=spread   # a named sweep
    python -m pipeline.sweep ablation=lora seed=4                                     # one run

`ablation` is a model of `world` (default kv_arithmetic) that `reports.<table>.blocks.<world>` names (table
default: table5); `seed` becomes that model's own `seed` (its init and data order; the global seed, which
builds the data, stays). Each job runs in its own directory, reports/<world>/sweeps/<sweep>/<ablation>-seed<k>/
(Hydra's job dir; `sweep` defaults to the table's name), so runs never overwrite each other: it links the world's
data, the synthesized sets the variant trains on, its tokenizer and the base models built by `dvc repro`, trained
or released (never retrained; a missing or stale one is one line, exit 2), rebuilds there any untrained random
upstream model (`train.steps: 0`, `init: random`: Table 5's random mA) with the job's seed, then trains and
evaluates the variant with the stages' own functions (pipeline.train.train, pipeline.evaluate.evaluate) and writes,
last, run.json: the model's conf digest, seed, metrics and train_info.
A job whose run.json exists under the current conf is skipped, so rerunning a sweep finishes what is missing;
a job that is the DVC default cell (same seed, built by DVC under the current params: dvc.lock) reuses its
metrics instead of training it again.
Every job is one W&B run (offline unless WANDB_MODE says otherwise), named <ablation>-seed<k>, grouped by
<world>/<sweep>, with the model's conf, its loss curve and its metrics. When every job has ended, the sweep
rewrites reports/<table>.md/.csv (pipeline.report: mean +- std over every seed that exists, the DVC default
cell included); a failed job stops the sweep before that, so no report is written from part of it.

Parameters come from params.yaml (CALM_PARAMS), as for every stage: a sweep runs against what `dvc repro` built.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError, UserError
from pipeline.layout import (MODELS_CACHE, RUN_FILE, data_dir, metrics_path, model_dir, sweep_run_name, sweeps_dir,
                             tokenizer_dir)
from pipeline.params import PUBLISHED_PRESET  # the preset whose records and tables are committed
from pipeline.seed_tables import dvc_locked_params, other_micro_batches, upstream_split
from pipeline.stages import synthesized_inputs
from pipeline.training.lineage import upstream_models

APP = "calm_sweep"


@dataclass
class SweepConfig:
    ablation: str = "calm"          # a model of `world` named by the table's block
    seed: int = 0                   # the model's own seed
    world: str = "kv_arithmetic"
    table: str = "table5"
    sweep: str = "${table}"         # the sweep's name: reports/<world>/sweeps/<sweep>/
    report: bool = True             # rewrite reports/<table>.md/.csv when the sweep ends
    overwrite: bool = False         # replace a record made under another conf or on other bases (else: refused)


SWEEP_DIR = f"{sweeps_dir('${world}')}/${{sweep}}"  # the layout's paths, with the fields Hydra interpolates per job
HYDRA_SETTINGS = {
    "run": {"dir": f"{SWEEP_DIR}/{sweep_run_name('${ablation}', '${seed}')}"},
    "sweep": {"dir": SWEEP_DIR, "subdir": sweep_run_name("${ablation}", "${seed}")},
    "job": {"chdir": True},
    "callbacks": {"report": {"_target_": "pipeline.sweep.SweepCallback"}},
}


def _params_file(root: Path) -> Path:
    path = Path(os.environ.get("CALM_PARAMS", "params.yaml"))
    return path if path.is_absolute() else root / path


def sweep_variants(params: dict, world: str, table: str) -> list[str]:
    """The models a sweep may run: those the table's block for `world` names."""
    from pipeline.report import table_conf

    worlds = params.get("worlds") or {}
    if world not in worlds:
        raise PipelineError(f"unknown world {world!r}: params.yaml declares {', '.join(worlds) or 'none'}")
    block = (table_conf(table, params).get("blocks") or {}).get(world)
    if not block:
        raise PipelineError(f"reports.{table} has no block for world {world}: nothing of it to sweep")
    return list(block["columns"].values())


def check_variant(params: dict, world: str, table: str, ablation: str) -> None:
    variants = sweep_variants(params, world, table)
    if ablation not in variants:
        raise PipelineError(f"unknown variant {ablation!r}: {table} of world {world} sweeps {', '.join(variants)}")


def preflight(params: dict, world: str, table: str, ablation: str, root: Path) -> None:
    """What can fail before any training, checked for every job of a sweep before its first: the variant is one
    the table names, the world is built, a LoRA's rank reaches parity (counted from conf)."""
    check_variant(params, world, table, ablation)
    upstream_plan(params, world, ablation, root)
    cfg = params["worlds"][world]["models"][ablation]
    rank = (cfg.get("lora") or {}).get("r")
    if cfg.get("kind") == "lora" and isinstance(rank, dict):
        from pipeline.tokenization import load_tokenizer
        from pipeline.training.kinds import _built_architecture, composition_added_parameters, lora_plan

        tokenizer = load_tokenizer(root / tokenizer_dir(world))
        budget = composition_added_parameters(params, world, rank.get("match"), tokenizer)
        lora_plan(_built_architecture(params, world, cfg["init"], tokenizer), budget, (cfg.get("lora") or {}).get("target_modules"),
                  what=f"model {world}/{ablation} (lora.r: {{match: {rank.get('match')}}})")


def upstream_plan(params: dict, world: str, ablation: str, root: Path) -> tuple[list[str], list[str]]:
    """-> (linked, rebuilt): the models the variant builds on (transitively), trained or released, linked from the
    repository, and the untrained random ones (seed_tables.upstream_split), rebuilt in the job with its seed.
    Refuses in one line when a linked one is missing or was built by DVC under other params than params.yaml's."""
    models = params["worlds"][world]["models"]
    for path in (data_dir(world), tokenizer_dir(world)):
        if not (root / path).exists():
            raise PipelineError(f"world {world} is not built: {path} is missing; build it first (dvc repro "
                                f"report@{_table_hint(params, world)} or make table5)")
    for path in synthesized_inputs(params, world, ablation):   # written whole by its stage (pipeline.io.atomic_dir)
        if not (root / path).exists():
            raise PipelineError(f"world {world} is not built: {path} is missing; build it first (dvc repro "
                                f"synthesize@{world}/{Path(path).name})")
    locked = dvc_locked_params(root)
    linked, rebuilt = upstream_split(params, world, ablation)
    for name in linked:
        if not (root / model_dir(world, name) / "train_info.json").exists():
            raise PipelineError(f"world {world} is not built: {model_dir(world, name)} is missing; build it first "
                                f"(dvc repro train@{world}/{name}, or make table5)")
        stage = locked.get(f"train@{world}/{name}")
        key = f"worlds.{world}.models.{name}"
        if stage and key in stage and (stage[key] != models[name] or other_micro_batches(stage, params, world)):
            raise PipelineError(f"{model_dir(world, name)} is stale: params.yaml changed since DVC built it; "
                                f"rebuild it first (dvc repro train@{world}/{name})")
    return linked, rebuilt


def _table_hint(params: dict, world: str) -> str:
    return next((t for t, c in (params.get("reports") or {}).items() if world in (c.get("blocks") or {})), "table1")


def _link(target: Path, link: Path) -> None:
    """A relative symlink (the repository may move)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    relative = Path(os.path.relpath(target.resolve(), link.parent.resolve()))
    if link.is_symlink() or link.exists():
        if link.is_symlink() and Path(os.readlink(link)) == relative:
            return
        link.unlink()
    link.symlink_to(relative, target_is_directory=target.is_dir())


def reusable_default(params: dict, world: str, ablation: str, seed: int, root: Path) -> dict | None:
    """The DVC default cell of `ablation` when it is this very run (same seed, built by DVC under params.yaml's
    current params): its metrics and train_info, so `seed=0,1,2` does not train seed 0 a second time."""
    info_file, metrics_file = root / model_dir(world, ablation) / "train_info.json", root / metrics_path(world, ablation)
    if not (info_file.exists() and metrics_file.exists()):
        return None
    info = json.loads(info_file.read_text())
    if info.get("seed") != seed:
        return None
    models = params["worlds"][world]["models"]
    locked = dvc_locked_params(root)
    for name in [ablation, *upstream_models(world, ablation, models[ablation], models)]:
        stage, key = locked.get(f"train@{world}/{name}"), f"worlds.{world}.models.{name}"
        if not stage or stage.get(key) != models[name]:
            return None  # not built by DVC, or under other params: train it here
        if other_micro_batches(stage, params, world):
            return None  # built under another micro-batching
    evaluated = locked.get(f"evaluate@{world}/{ablation}")
    if not evaluated or evaluated.get(f"worlds.{world}.evaluation") != params["worlds"][world]["evaluation"]:
        return None
    from pipeline.train import read_run_log

    return {"metrics": json.loads(metrics_file.read_text())["metrics"], "train_info": info,
            "seconds_this_run": read_run_log(world, ablation, root).get("seconds_this_run")}


class _wandb_off:
    """W&B off while the stage functions run: the job logs one run of its own (train and evaluate would each
    open one)."""

    def __enter__(self):
        self.mode = os.environ.get("WANDB_MODE")
        os.environ["WANDB_MODE"] = "disabled"

    def __exit__(self, *exc):
        if self.mode is None:
            os.environ.pop("WANDB_MODE", None)
        else:
            os.environ["WANDB_MODE"] = self.mode


def _log_wandb(params: dict, run: dict, root: Path) -> None:
    from pipeline.tracking import wandb_enabled

    if not wandb_enabled():
        return
    import wandb

    config = {"world": run["world"], "model": run["model"], "seed": run["seed"], "sweep": run["sweep"],
              "preset": params["preset"], "digest": run["digest"], "conf": run["conf"]}
    with wandb.init(project=(params.get("wandb") or {}).get("project", "calm-repro"), group=f"{run['world']}/{run['sweep']}",
                    name=f"{run['model']}-seed{run['seed']}", job_type="sweep", config=config, reinit="finish_previous") as w:
        for step, loss in run["train_info"].get("loss_history") or []:
            w.log({"train/loss": loss}, step=int(step))
        w.summary.update({f"{s}/{m['metric']}": m["score"] for s, m in run["metrics"].items()})
        w.summary.update({"train/seconds": run.get("seconds_this_run"), "wall_seconds": run["wall_seconds"]})


def run_job(params: dict, world: str, table: str, ablation: str, seed: int, sweep: str, root: Path, job_dir: Path,
            overwrite: bool = False) -> dict:
    """One variant with one seed in job_dir (the current directory): link, rebuild, train, evaluate, record."""
    import copy

    from pipeline.evaluate import evaluate
    from pipeline.io import atomic_write_json
    from pipeline.report import build_digests, run_digest
    from pipeline.train import read_run_log, train

    t0 = time.time()
    preflight(params, world, table, ablation, root)
    linked, rebuilt = upstream_plan(params, world, ablation, root)
    digest, bases = run_digest(params, world, ablation), build_digests(params, world, ablation, root)
    record = job_dir / RUN_FILE
    if record.exists():
        done = json.loads(record.read_text())
        if done.get("digest") == digest and done.get("seed") == seed and done.get("bases") == bases:
            print(f"{ablation}-seed{seed}: done already ({record})", file=sys.stderr)
            return done
        if not overwrite:
            why = "another conf" if done.get("digest") != digest else "other data or base models"
            raise PipelineError(f"{record} holds a run made under {why}: kept; replace it with overwrite=true, "
                                f"or keep both with sweep=<another name>")
        print(f"{ablation}-seed{seed}: replacing {record} (overwrite=true)", file=sys.stderr)
        record.unlink()
    params = copy.deepcopy(params)
    models = params["worlds"][world]["models"]
    reused = reusable_default(params, world, ablation, seed, root)
    if reused:
        print(f"{ablation}-seed{seed}: the DVC default cell is this run (same seed, current params): reused, "
              f"not trained again", file=sys.stderr)
        metrics, info = reused["metrics"], reused["train_info"]
    else:
        for name in [ablation, *rebuilt]:
            models[name]["seed"] = seed
        for path in (data_dir(world), *map(Path, synthesized_inputs(params, world, ablation)), tokenizer_dir(world),
                     *(model_dir(world, n) for n in linked)):
            _link(root / path, job_dir / path)
        (root / MODELS_CACHE).mkdir(parents=True, exist_ok=True)
        _link(root / MODELS_CACHE, job_dir / MODELS_CACHE)  # tokenised data, shared
        with _wandb_off():
            for name in rebuilt:
                train(params, f"{world}/{name}")
            train(params, f"{world}/{ablation}")
            metrics = evaluate(params, f"{world}/{ablation}")
        info = json.loads((model_dir(world, ablation) / "train_info.json").read_text())
    seconds = reused["seconds_this_run"] if reused else read_run_log(world, ablation).get("seconds_this_run")
    run = {"world": world, "table": table, "sweep": sweep, "model": ablation, "seed": seed, "digest": digest,
           "bases": bases, "preset": params["preset"], "conf": dict(models[ablation], seed=seed), "rebuilt_with_seed": rebuilt,
           "linked": linked, "reused_default_cell": bool(reused), "metrics": metrics, "train_info": info,
           "seconds_this_run": seconds,
           "wall_seconds": round(time.time() - t0, 1)}
    _log_wandb(params, run, root)
    atomic_write_json(record, run)  # last: a run without it is unfinished and never counted
    print(f"{ablation}-seed{seed}: " + " ".join(f"{s}={m['score']:.1f}" for s, m in metrics.items())
          + f" ({run['wall_seconds']:.0f} s)", file=sys.stderr)
    return run


def _fail(e: UserError) -> None:
    print(f"error: {e}", file=sys.stderr)
    raise SystemExit(2)


def _load(root: Path) -> dict:
    from pipeline.params import load_params

    return load_params(_params_file(root))


def _sweep_values(overrides: list[str], key: str) -> list:
    """The values a multirun gives `key` (from hydra.overrides.task), expanded as the sweeper will."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    values = []
    for o in OverridesParser.create().parse_overrides(overrides):
        if o.get_key_element() == key:
            values += [str(v) for v in o.sweep_string_iterator()] if o.is_sweep_override() else [str(o.value())]
    return values


try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover
    Callback = object


class SweepCallback(Callback):
    """Checks every variant of a multirun before its first job; writes the table when every job has ended."""

    def on_multirun_start(self, config, **kwargs) -> None:
        root = Path.cwd()
        try:
            params = _load(root)
            task = list(config.hydra.overrides.task)
            world = (_sweep_values(task, "world") or [config.world])
            table = (_sweep_values(task, "table") or [config.table])
            for w in world:
                for t in table:
                    for ablation in _sweep_values(task, "ablation") or [config.ablation]:
                        preflight(params, w, t, ablation, root)
        except UserError as e:
            _fail(e)

    def _report(self, config) -> None:
        if not config.report:
            return
        from hydra.utils import get_original_cwd

        from pipeline.report import write_report

        root = Path(get_original_cwd()) if _hydra_ready() else Path.cwd()
        here = Path.cwd()
        os.chdir(root)
        try:
            write_report(config.table, _load(root))
            print(f"wrote reports/{config.table}.md and .csv", file=sys.stderr)
        except UserError as e:
            _fail(e)
        finally:
            os.chdir(here)

    def on_multirun_end(self, config, **kwargs) -> None:
        self._report(config)

    def on_run_end(self, config, **kwargs) -> None:
        self._report(config)


def _preset(root: Path) -> str | None:
    try:
        return _load(root).get("preset")
    except UserError:
        return None  # reported in one line by the job itself


def _hydra_ready() -> bool:
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.initialized()


def _task(cfg) -> None:
    from hydra.utils import get_original_cwd

    root = Path(get_original_cwd())
    try:
        if not isinstance(cfg.seed, int) or isinstance(cfg.seed, bool):
            raise PipelineError(f"seed must be an integer, not {cfg.seed!r}")
        params = _load(root)
        run_job(params, cfg.world, cfg.table, cfg.ablation, cfg.seed, cfg.sweep, root, Path.cwd(), cfg.overwrite)
    except UserError as e:
        _fail(e)


def main() -> None:
    import hydra
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    # the app's config: SweepConfig's fields (as plain values: the sweep's interpolations resolve per job) and
    # where Hydra puts each job (HYDRA_SETTINGS)
    os.environ.setdefault("WANDB_DIR", os.getcwd())  # runs in the repository's wandb/, as the stages' (not per job dir)
    node = OmegaConf.to_container(OmegaConf.structured(SweepConfig))
    preset = _preset(Path.cwd())
    if preset not in (None, PUBLISHED_PRESET):
        # another preset's runs never land beside (or over) the published ones, nor rewrite the published tables
        node.update(sweep=f"${{table}}-{preset}", report=False)
    ConfigStore.instance().store(name=APP, node={**node, "hydra": HYDRA_SETTINGS})
    hydra.main(version_base=None, config_path=None, config_name=APP)(_task)()


if __name__ == "__main__":
    main()
