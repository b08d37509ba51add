"""params.yaml: conf/ composed by Hydra, the one file every stage reads.

    python -m pipeline.params [overrides...]     # e.g. preset=micro, world=[kv_arithmetic,copy]
    python -m pipeline.params --check            # exit 2 if params.yaml or dvc_stages.yaml differs from conf/
    python -m pipeline.params --show preset=cpu  # print every value the preset gives, one `key: value` a line
    python -m pipeline.params --pipeline real    # real/params.yaml: the real-model worlds (conf/real.yaml)

Two pipelines share one stage template. dvc.yaml, at the root, runs against params.yaml (conf/config.yaml: every
CPU world), and is what a bare `dvc repro` builds. real/dvc.yaml is a copy of the same template, run from the root
against real/params.yaml (conf/real.yaml: the worlds that need the real models' wheels and hours of CPU), so those
stages are built only when named (`dvc repro real/dvc.yaml:report@table4_real`) and locked in real/dvc.lock.

The stage maps dvc.yaml iterates over (`dvc_stages`, derived by pipeline/stages.py) are written beside the params
file, to dvc_stages.yaml (real/dvc_stages.yaml), which dvc.yaml reads as `vars`, not into params.yaml: DVC parses
params.yaml once per stage to check its params, and the maps were four fifths of it (a no-op `dvc repro` spent most of
its time there). params.yaml keeps `dvc_stages_digest`, the digest of what the maps are derived from (its worlds,
reports, figures and seed), and dvc_stages.yaml's first lines name the digest it was derived with: a stage that DVC
runs refuses, in one line, a stages file made from other params (load_params), so the graph DVC ran is never
silently another one than params.yaml's.

The same composition as DVC's Hydra integration (`dvc exp run -S ...`), which also finds the pipeline's
resolver (`calm_dag`, register_resolver) through hydra_plugins/: there the resolver writes dvc_stages.yaml beside
the params.yaml that DVC writes, since nothing else of the pipeline runs before DVC reads the graph.

A preset other than the published one (`cpu`) never builds in the published workspace (the checkout whose
dvc.lock git tracks): its outputs would land on the published data, models, tables and dvc.lock entries, which
are keyed by world and table name, not by preset. It gets its own workspace instead, `presets/<preset>/`
(gitignored and .dvcignored): a copy of the checkout's source files (tracked and untracked, as `git ls-files -co
--exclude-standard` lists them) without the published outputs, with its own git repository, params.yaml,
dvc.lock and DVC cache. Running `python -m pipeline.params preset=micro` again re-copies the source files and
keeps what the workspace built.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from pipeline.checks import check_params
from pipeline.cli import cli
from pipeline.errors import PipelineError, UserError
from pipeline.io import atomic_write_text, fingerprint
from pipeline.stages import derive

ROOT = Path(__file__).resolve().parent.parent
PARAMS_FILE = "params.yaml"
# pipeline -> (its root config in conf/, the params file it is composed into); both files sit at the paths DVC
# reads them from (conf/*.yaml `layout.params`)
PIPELINES = {"main": ("config", PARAMS_FILE), "real": ("real", "real/params.yaml")}
PUBLISHED_PRESET = "cpu"  # conf/config.yaml's default: the preset whose tables, records and dvc.lock are committed
PRESETS_DIR = "presets"   # presets/<preset>/: another preset's own workspace
WORKSPACE_MARKER = ".preset-workspace"  # in a preset workspace: the preset it was made for
# what a preset workspace leaves out of its copy: the published preset's outputs and their lock entries
PUBLISHED_OUTPUTS = ("dvc.lock", "real/dvc.lock", "reports/")
RESOLVER = "calm_dag"
STAGES_FILE = "dvc_stages.yaml"      # beside each params file: the stage maps, dvc.yaml's `vars`
DIGEST_KEY = "dvc_stages_digest"     # in params.yaml: the digest of DAG_INPUTS, which the stages file must name
DAG_INPUTS = ("worlds", "reports", "figures", "seed")  # what pipeline/stages.py derives the maps from
DIGEST_LINE = "# derived from params with dvc_stages_digest: "


def stages_file(params_file: str | os.PathLike) -> Path:
    return Path(params_file).with_name(STAGES_FILE)


def dag_digest(params: dict) -> str:
    """The digest of what the stage maps are derived from: equal for the params DVC's Hydra integration resolves
    and for the same params read back from the file it writes."""
    return fingerprint({k: params[k] for k in DAG_INPUTS if k in params})


def check_stages_file(params_file: str | os.PathLike, params: dict) -> None:
    """One PipelineError unless the stages file beside `params_file` was derived from `params` (what it holds)."""
    path = stages_file(params_file)
    if not path.exists():
        raise PipelineError(f"{path} is missing (the stage maps dvc.yaml reads): run `make params`")
    with open(path) as f:
        named = next((line[len(DIGEST_LINE):].strip() for line in (f.readline(), f.readline())
                      if line.startswith(DIGEST_LINE)), None)
    if named == dag_digest(params):
        return
    if named == params.get(DIGEST_KEY):
        raise PipelineError(f"{params_file} was edited after it was composed (its worlds, reports, figures or seed "
                            f"no longer give its {DIGEST_KEY}), so DVC ran the graph of the old params: compose it "
                            f"instead (`make params OVERRIDES=...` or `dvc exp run -S ...`)")
    raise PipelineError(f"{path} was derived from other params than {params_file} (its digest {named}, "
                        f"{params_file}'s {params.get(DIGEST_KEY)}): run `make params`")


def load_params(path: str | os.PathLike | None = None) -> dict:
    import yaml

    p = Path(path or os.environ.get("CALM_PARAMS", PARAMS_FILE))
    if not p.exists():
        raise PipelineError(f"{p} not found: run `make params` (composes conf/ into params.yaml)")
    with open(p) as f:
        params = check_params(yaml.safe_load(f))
    if os.environ.get("DVC_STAGE"):  # DVC runs this stage: the graph it read from dvc_stages.yaml must be params'
        check_stages_file(p, params)
    return params


def model_spec(params: dict, key: str, section: str = "models") -> tuple[str, str, dict]:
    """`<world>/<model>` -> (world, model, its conf block), or one clear line naming what is declared; another
    `section` of the world names its entries alike (`synthesized`: the sets pipeline/synthesize.py makes)."""
    world, _, name = key.partition("/")
    worlds = params.get("worlds") or {}
    if world not in worlds:
        raise PipelineError(f"unknown world {world!r} in {key!r}: params.yaml declares {', '.join(worlds) or 'none'}")
    entries = worlds[world].get(section) or {}
    if name not in entries:
        what = "model" if section == "models" else f"worlds.{world}.{section} entry"
        raise PipelineError(f"unknown {what} {key!r}: world {world} declares {', '.join(entries) or 'none'}")
    return world, name, entries[name]


# Composition variants (paper §4.4, Table 5): a model with `variant_of: <sibling>` is that sibling with what the
# variant states on top, like lm-eval's `include:`. The inheritance is done here, once, on the composed conf before
# anything is resolved: the reference's node is copied whole and the variant's own node merged over it, so a field
# added to conf/composition/calm.yaml (or set on the reference by a world or size file) reaches every variant
# without being listed anywhere, and the variant's own overrides (its conf/composition/ file, the world or size
# file, the command line) win. Interpolations are copied unresolved: a relative one (`${..mB.data}`) reads the
# same sibling from the variant, which sits beside its reference. Kept in this module, not one of its own: every
# stage's code list (dvc_stages.*.code, in dvc_stages.yaml) is this module's import closure.
VARIANT_KEY = "variant_of"
# what a variant never takes from its reference: its own seed (its init and data order; null = the global seed)
OWN_FIELDS = {"seed": None}


def inherit_variants(cfg) -> None:
    """Every `variant_of` model of every world of `cfg` (an OmegaConf DictConfig, changed in place) made its
    reference plus its own fields. Idempotent: a variant already complete is rebuilt equal to itself."""
    from omegaconf import DictConfig

    for world in (cfg.get("worlds") or {}).values():
        models = world.get("models") if isinstance(world, DictConfig) else None
        if isinstance(models, DictConfig):
            for name in list(models.keys()):
                _inherit(models, name, ())


def _inherit(models, name: str, chain: tuple[str, ...]) -> None:
    from omegaconf import DictConfig, OmegaConf, open_dict

    if OmegaConf.is_missing(models, name) or OmegaConf.is_interpolation(models, name):
        return  # not a model stated here (yet): nothing to inherit into
    node = models[name]
    if not isinstance(node, DictConfig) or VARIANT_KEY not in node:
        return
    reference = node[VARIANT_KEY]
    if reference not in models or reference == name or reference in chain:
        declared = ", ".join(k for k in models if k != name)
        raise PipelineError(f"model {name}: variant_of {reference!r} is not a sibling composition "
                            f"(its world declares {declared})")
    _inherit(models, reference, (*chain, name))  # a variant of a variant: its reference complete first
    base = OmegaConf.to_container(models[reference], resolve=False)
    base.pop(VARIANT_KEY, None)
    base.update({k: v for k, v in OWN_FIELDS.items() if k in base})
    # the reference's keys keep their order; the variant's new keys (variant_of, lora, ...) follow
    merged = OmegaConf.merge(base, OmegaConf.to_container(node, resolve=False))
    with open_dict(models):  # Hydra composes in struct mode
        models[name] = merged


def _dvc_hydra_output() -> Path | None:
    """The params file DVC's Hydra integration is composing conf/ into (`dvc exp run -S ...`: the `output_file` of
    dvc.utils.hydra.compose_and_dump, which is on the stack while it resolves the config), or None when anything
    else composes (compose_params)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "compose_and_dump" and frame.f_globals.get("__name__") == "dvc.utils.hydra":
            return Path(frame.f_locals["output_file"])
        frame = frame.f_back
    return None


def _refuse_other_preset_here(preset) -> None:
    """`dvc exp run -S preset=micro` in the published workspace would rebuild its data, models, tables and
    dvc.lock entries with another preset's (which builds in its own workspace instead: preset_workspace): refused
    before DVC writes params.yaml or dvc_stages.yaml. Only under DVC's Hydra integration: the pipeline's own
    composition may name any preset."""
    if preset not in (None, PUBLISHED_PRESET) and _dvc_hydra_output() and is_published_workspace(Path.cwd()):
        raise PipelineError(f"preset {preset} would rebuild over the published {PUBLISHED_PRESET} outputs here: "
                            f"`make params OVERRIDES=preset={preset}` makes its own workspace, presets/{preset}/")


def _resolve_dag(*, _root_) -> str:
    """dvc_stages_digest: the stage maps derived (an inconsistent declaration fails here, in one line) and, under
    DVC's Hydra integration, written beside the params file it writes; their digest is the node's value."""
    from omegaconf import OmegaConf

    _refuse_other_preset_here(_root_.get("preset"))
    # DVC's Hydra integration resolves the composed conf as it is: dvc_stages_digest (this resolver) comes before
    # worlds in it, so the variants are complete before any of them is read (a no-op after compose_params)
    inherit_variants(_root_)

    plain = {k: OmegaConf.to_container(_root_[k], resolve=True) for k in ("worlds", "reports", "figures") if k in _root_}
    if "seed" in _root_:  # checked with the models' own seeds
        plain["seed"] = _root_["seed"]
    maps = derive(plain)
    output = _dvc_hydra_output()
    if output is not None:
        write_stages_file(maps, dag_digest(plain), output)
    return dag_digest(plain)


def register_resolver() -> None:
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, _resolve_dag)


def compose_params(overrides: Iterable[str] = (), conf_dir: str | os.PathLike | None = None,
                   config_name: str = "config") -> dict:
    """Compose conf/<config_name>.yaml with Hydra (as DVC's Hydra integration does) into a plain dict."""
    import yaml
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    register_resolver()
    conf_dir = Path(conf_dir or ROOT / "conf").resolve()
    overrides = list(overrides)
    presets = sorted(p.stem for p in (conf_dir / "preset").glob("*.yaml"))
    for o in overrides:
        if o.split("=", 1)[0].lstrip("+~") == "preset":
            name = o.split("=", 1)[1] if "=" in o else ""
            if name not in presets:
                raise PipelineError(f"unknown preset {name!r}: choose one of {', '.join(presets)}")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(config_name=config_name, overrides=overrides)
            inherit_variants(cfg)
            params = OmegaConf.to_container(cfg, resolve=True)
    except PipelineError as e:  # a variant's bad reference (inherit_variants): already one line
        raise PipelineError(f"cannot compose conf/: {e}") from None
    except (HydraException, OmegaConfBaseException, yaml.YAMLError) as e:
        cause = e.__cause__ if isinstance(e.__cause__, PipelineError) else None
        text = str(cause or e).strip()
        if isinstance(e, yaml.YAMLError):  # the parser's message spans lines: what it expected, and where
            first = " ".join(line.strip() for line in text.splitlines())
        else:
            first = text.splitlines()[0] if text else type(e).__name__
        raise PipelineError(f"cannot compose conf/: {first}") from None
    finally:
        GlobalHydra.instance().clear()
    return check_params(params)


def _shared_lists(node, seen: dict):
    """The same params with every repeated long list one shared object, which YAML writes once (an anchor) and then
    refers to (aliases): the stage maps repeat each stage's source file list (dvc_stages.*.code), and DVC parses
    the file in pure Python."""
    if isinstance(node, dict):
        return {k: _shared_lists(v, seen) for k, v in node.items()}
    if isinstance(node, list):
        node = [_shared_lists(v, seen) for v in node]
        return seen.setdefault(repr(node), node) if len(node) >= 8 else node
    return node


def stage_maps(params: dict) -> dict:
    """dvc_stages: the flat maps dvc.yaml's `foreach` iterates over, derived from params (pipeline/stages.py; its
    paths relative to the current directory, the repository root)."""
    return derive({k: params[k] for k in DAG_INPUTS if k in params})


def stages_text(maps: dict, digest: str) -> str:
    import yaml

    return ("# GENERATED by `make params` (pipeline/params.py) beside its params file: the stage maps dvc.yaml "
            "iterates over. Do not edit.\n"
            f"{DIGEST_LINE}{digest}\n"
            + yaml.safe_dump({"dvc_stages": _shared_lists(maps, {})}, sort_keys=False, default_flow_style=None,
                             width=100))


def write_stages_file(maps: dict, digest: str, params_file: str | os.PathLike) -> None:
    atomic_write_text(stages_file(params_file), stages_text(maps, digest))


def dump_params(params: dict, path: str | os.PathLike = PARAMS_FILE, maps: dict | None = None) -> None:
    """params to `path` and the stage maps (derived from them unless given) to the stages file beside it, with the
    digest of what they are derived from in both."""
    import yaml

    params = {**params, DIGEST_KEY: dag_digest(params)}
    write_stages_file(stage_maps(params) if maps is None else maps, params[DIGEST_KEY], path)
    text = "# GENERATED from conf/ by `make params` (or DVC's Hydra integration): do not edit by hand.\n"
    text += yaml.safe_dump(_shared_lists(params, {}), sort_keys=False, default_flow_style=None, width=100)
    atomic_write_text(path, text)


DERIVED = (DIGEST_KEY,)  # computed from the rest, never set by a preset: --show leaves it out


def shown_values(params: dict) -> list[str]:
    """Every value of composed params as one `dotted.key: value` line (the value in YAML's flow style, as
    params.yaml writes it), in the params' order, the DERIVED keys left out: what `--show` prints, so that what a
    preset sets (through its size files, runtime and model files) can be read, grepped and compared per key.
    Mappings, and lists of mappings (e.g. a table's rows: `.0.`, `.1.`), are walked into; any other value is one."""
    import yaml

    def flow(value) -> str:  # a bare scalar is dumped as a document ("cpu\n...\n"): keep the value only
        text = yaml.safe_dump(value, default_flow_style=True, width=2 ** 31, allow_unicode=True).removesuffix(
            "\n...\n").strip()
        # a string with a line break (a stop sequence) folds over lines in YAML: JSON, also YAML, keeps one line
        return json.dumps(value, ensure_ascii=False) if "\n" in text else text

    def walk(node, key: str):
        if isinstance(node, dict) and node:
            for k, v in node.items():
                yield from walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(node, list) and any(isinstance(v, dict) for v in node):
            for i, v in enumerate(node):
                yield from walk(v, f"{key}.{i}")
        else:
            yield f"{key}: {flow(node)}"

    return list(walk({k: v for k, v in params.items() if k not in DERIVED}, ""))


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=calm", "-c", "user.email=calm@localhost", *args], cwd=root,
                          capture_output=True, text=True)


def is_published_workspace(root: Path) -> bool:
    """A checkout of the published preset: its params.yaml names it and git tracks its dvc.lock (not a preset
    workspace, not a copy already composed for another preset, not a scratch directory git does not track)."""
    if (root / WORKSPACE_MARKER).exists() or not (root / "dvc.lock").exists() or not (root / PARAMS_FILE).exists():
        return False
    try:
        current = load_params(root / PARAMS_FILE).get("preset")
    except UserError:  # an unreadable params.yaml is rewritten where it is
        return False
    return current == PUBLISHED_PRESET and _git(root, "ls-files", "--error-unmatch", "dvc.lock").returncode == 0


def copy_checkout(root: Path, dst: Path, leave_out: tuple[str, ...] = ()) -> None:
    """Copy the checkout's source files (git's tracked and untracked-not-ignored files) from `root` into `dst`,
    leaving out every path that is or starts with one in `leave_out`; a left-out world's `sweeps/` folder is made
    empty, since the report stages read it."""
    listed = _git(root, "ls-files", "-co", "--exclude-standard", "-z")
    if listed.returncode != 0:
        raise PipelineError(f"cannot list the checkout's files in {root}: {listed.stderr.strip()}")
    dst.mkdir(parents=True, exist_ok=True)
    for rel in filter(None, listed.stdout.split("\0")):
        src = root / rel
        if any(rel == o or rel.startswith(o) for o in leave_out):
            if "/sweeps/" in rel:  # the report stages read each world's sweep records: none yet, at this preset
                (dst / rel.split("/sweeps/")[0] / "sweeps").mkdir(parents=True, exist_ok=True)
            continue
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def preset_workspace(root: Path, preset: str) -> Path:
    """presets/<preset>/ under `root`, made or refreshed: the checkout's source files copied over (outputs the
    workspace built are kept), without the published outputs (PUBLISHED_OUTPUTS)."""
    work = root / PRESETS_DIR / preset
    copy_checkout(root, work, leave_out=(f"{PRESETS_DIR}/",) + PUBLISHED_OUTPUTS)
    for keep in ("reports", "data", "models"):
        (work / keep).mkdir(exist_ok=True)
    (work / WORKSPACE_MARKER).write_text(preset + "\n")
    if not (work / ".git").exists():  # DVC needs a git repository; this one never leaves the machine
        for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", f"preset {preset} workspace")):
            made = _git(work, *args)
            if made.returncode != 0:
                raise PipelineError(f"cannot make presets/{preset}/ a git repository: git {args[0]}: {made.stderr.strip()}")
    return work


def rebase_relative_paths(node, root: Path, work: Path):
    """params composed at `root`, for a workspace at `work`: every path value written relative to the checkout
    (./x, ../shared/benchmarks) made relative to the workspace, so that it names the same files there."""
    if isinstance(node, dict):
        return {k: rebase_relative_paths(v, root, work) for k, v in node.items()}
    if isinstance(node, list):
        return [rebase_relative_paths(v, root, work) for v in node]
    if isinstance(node, str) and node.startswith(("./", "../")):
        return os.path.relpath(os.path.normpath(root / node), work)
    return node


def _pipeline_option(argv: list[str]) -> tuple[str, list[str]]:
    """`--pipeline NAME` (or `--pipeline=NAME`) out of argv: the pipeline's name and the remaining arguments."""
    name, rest, args = "main", [], iter(argv)
    for a in args:
        if a == "--pipeline":
            a = "--pipeline=" + next(args, "")
        if a.startswith("--pipeline="):
            name = a.split("=", 1)[1]
            if name not in PIPELINES:
                raise PipelineError(f"unknown pipeline {name!r}: choose one of {', '.join(PIPELINES)}")
        else:
            rest.append(a)
    return name, rest


@cli
def main(argv: list[str]) -> None:
    pipeline, argv = _pipeline_option(argv)
    config_name, out = PIPELINES[pipeline]
    check, show = "--check" in argv, "--show" in argv
    overrides = [a for a in argv if a not in ("--check", "--show")]
    params = compose_params(overrides, config_name=config_name)
    if show:  # reads conf/ only: writes no params file
        print("\n".join(shown_values(params)))
        return
    if check:
        if load_params(out) != params:
            raise PipelineError(f"{out} differs from conf/: run `make params`")
        if not stages_file(out).exists() or stages_file(out).read_text() != stages_text(stage_maps(params),
                                                                                          params[DIGEST_KEY]):
            raise PipelineError(f"{stages_file(out)} differs from conf/ and the stage code: run `make params`")
        print(f"{out} and {stages_file(out)} match conf/")
        return
    root = Path.cwd()
    if params["preset"] != PUBLISHED_PRESET and is_published_workspace(root):
        work = preset_workspace(root, params["preset"])
        dump_params(rebase_relative_paths(params, root, work), work / out,
                    maps=rebase_relative_paths(stage_maps(params), root, work))
        where = work.relative_to(root)
        # the root pipeline's bare `dvc repro` builds every CPU table; the real pipeline is built by target
        repro = "dvc repro" if pipeline == "main" else " or ".join(
            f"dvc repro {Path(out).parent / 'dvc.yaml'}:report@{t}" for t in params["reports"])
        print(f"wrote {where / out} (preset={params['preset']}): the preset builds in its own workspace, "
              f"apart from the published {PUBLISHED_PRESET} outputs: cd {where} && {repro}")
        return
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    dump_params(params, out)
    print(f"wrote {out} and {stages_file(out)} (preset={params['preset']})")


if __name__ == "__main__":
    main()
