"""params.yaml is the composition of conf/ (one source of truth), and bad input fails with one line."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.code_deps import closure, covers, folded, stage_code
from pipeline.errors import PipelineError
from pipeline.params import (DIGEST_KEY, compose_params, dump_params, load_params, stage_maps, stages_file,
                             stages_text)

ROOT = Path(__file__).resolve().parents[2]


def test_params_yaml_equals_composed_conf():
    with open(ROOT / "params.yaml") as f:
        committed = yaml.safe_load(f)
    assert committed == compose_params([f"preset={committed['preset']}"]), "params.yaml drifted from conf/: run `make params`"
    assert committed["preset"] == "cpu", "the committed params.yaml must be the default preset"


@pytest.mark.parametrize("params_file", ["params.yaml", "real/params.yaml"])
def test_the_committed_stages_file_is_the_one_its_params_give(params_file):
    """The stage maps dvc.yaml reads (dvc_stages.yaml, beside each params file) are derived from the committed
    params, byte for byte, and name their digest."""
    committed = load_params(ROOT / params_file)
    assert (ROOT / stages_file(params_file)).read_text() == stages_text(stage_maps(committed), committed[DIGEST_KEY]), \
        f"{stages_file(params_file)} drifted from {params_file}: run `make params`"
    assert "dvc_stages" not in committed  # DVC parses params.yaml once per stage: the maps stay out of it


@pytest.mark.slow
@pytest.mark.parametrize("pipeline_file", ["dvc.yaml", "real/dvc.yaml"])
def test_every_lock_entry_lists_the_deps_its_stage_declares(pipeline_file):
    """A committed lock entry names the same deps as its stage in dvc.yaml, repeats included (dvc.yaml pads a
    stage's fixed dep slots by repeating one): else the first `dvc repro` in a fresh clone rewrites dvc.lock though
    every output hashes as committed. Stages the lock does not record, and the real-anchor worlds, recorded before
    their stages existed as they are (docs/results-table4.md), are not checked."""
    from collections import Counter

    from dvc.repo import Repo

    lock = (yaml.safe_load((ROOT / pipeline_file).with_suffix(".lock").read_text()) or {}).get("stages") or {}
    params_files = {"params.yaml", "real/params.yaml"}
    drifted = []
    for stage in Repo(str(ROOT)).index.stages:
        if stage.path_in_repo != pipeline_file or stage.name not in lock or "_real" in stage.name:
            continue
        declared = Counter(d.def_path for d in stage.deps if d.def_path not in params_files)
        if declared != Counter(d["path"] for d in lock[stage.name].get("deps") or []):
            drifted.append(stage.name)
    assert not drifted, f"lock entries whose deps are not their stage's: {drifted}"


def test_the_locks_record_every_code_dependency_as_the_checkout_has_it():
    """A change under pipeline/ either reruns the stages it touches, or, when it cannot alter their outputs, is
    re-recorded in both locks (scripts/relock_code.py): a stale code hash would make a stranger's `dvc repro` rerun
    those stages, and `dvc status` call published figures stale."""
    r = subprocess.run([sys.executable, "scripts/relock_code.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"stale code hashes in the locks: {r.stdout.strip()} {r.stderr[-500:]}"


@pytest.mark.parametrize("preset", ["micro", "cpu", "paper"])
def test_presets_compose(preset):
    p = compose_params([f"preset={preset}"])
    assert p["preset"] == preset
    w = p["worlds"]["kv_arithmetic"]
    assert w["data"]["n_keys"] > 0 and w["data"]["operators"]
    for name, m in w["models"].items():  # steps 0 only for a model declared untrained (Table 5's random mA)
        assert m["train"]["steps"] > 0 or (m["init"] == "random" and m["train"]["steps"] == 0), name
    # the paper's mA is smaller than its mB: keep that ratio
    a, b = w["models"]["mA"]["arch"], w["models"]["mB"]["arch"]
    assert a["layers"] * a["hidden"] ** 2 < b["layers"] * b["hidden"] ** 2


def test_paper_preset_is_the_papers_setting():
    p = compose_params(["preset=paper"])
    models = p["worlds"]["kv_arithmetic"]["models"]
    w = p["worlds"]["kv_arithmetic"]["data"]
    assert w["n_keys"] == 25000 and w["n_terms"] == [3, 6] and sorted(w["operators"]) == ["+", "-", "x"]
    assert w["key_length"] == [2, 6]
    # the CPU preset's departures from the paper's protocol are undone here
    assert (w["answer_format"], w["kv_math_format"], w["held_in_selection"]) == ("plain", "direct", "random")
    assert w["composition_task"] == "kv_math" and w["held_in_fraction"] == 0.2
    assert not models["calm"]["anchor_replay"] and not models["mB"]["prefix_fraction"]
    assert models["calm"]["composition"]["connections"] is None  # the paper's every-4th-layer default
    assert p["runtime"]["device"] == "cuda" and p["runtime"]["precision"] == "bf16"


def test_unknown_preset_is_one_clear_line():
    with pytest.raises(PipelineError, match="unknown preset 'nope'"):
        compose_params(["preset=nope"])
    r = subprocess.run([sys.executable, "-m", "pipeline.params", "preset=nope", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "unknown preset" in r.stderr


@pytest.mark.slow
def test_missing_upstream_output_is_one_clear_line(tmp_path):
    dump_params(compose_params(["preset=micro"]), tmp_path / "params.yaml")
    env = {"PYTHONPATH": str(ROOT), "CALM_PARAMS": str(tmp_path / "params.yaml"), "WANDB_MODE": "disabled", "PATH": "/usr/bin:/bin"}
    for args in (["pipeline.train", "kv_arithmetic/mA"], ["pipeline.evaluate", "kv_arithmetic/mA"], ["pipeline.report", "table1"]):
        r = subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert r.returncode == 2, (args, r.stderr[-500:])
        assert r.stderr.strip().count("\n") == 0 and "missing" in r.stderr, (args, r.stderr[-500:])


def test_impossible_sizes_cli_is_one_clear_line(tmp_path):
    dump_params(compose_params(["preset=micro", "worlds.kv_arithmetic.data.n_keys=100000"]), tmp_path / "params.yaml")
    env = {"PYTHONPATH": str(ROOT), "CALM_PARAMS": str(tmp_path / "params.yaml"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "pipeline.build_data", "kv_arithmetic"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "distinct strings" in r.stderr, r.stderr
    assert not (tmp_path / "data" / "kv_arithmetic").exists()


def test_dvc_stages_are_derived_from_what_is_declared():
    p = compose_params(["preset=micro", "world=[kv_arithmetic]"])
    stages = stage_maps(p)
    assert set(stages["train"]) == {f"kv_arithmetic/{m}" for m in p["worlds"]["kv_arithmetic"]["models"]}
    # evaluated = the models a report names (vanilla and the untrained random mA are only starting points)
    named = {m for t in p["reports"].values() for m in t["blocks"]["kv_arithmetic"]["columns"].values()}
    assert {"mA", "mB", "calm", "encoder"} <= named
    assert set(stages["evaluate"]) == {f"kv_arithmetic/{m}" for m in named}
    calm = stages["train"]["kv_arithmetic/calm"]
    assert "models/kv_arithmetic/mB" in calm["upstream"] and "models/kv_arithmetic/mA" in calm["upstream"]
    # a model that says evaluate: true is evaluated too, without a report naming it
    p = compose_params(["preset=micro", "world=[kv_arithmetic]", "+worlds.kv_arithmetic.models.vanilla.evaluate=true"])
    assert "kv_arithmetic/vanilla" in stage_maps(p)["evaluate"]


@pytest.mark.parametrize("entry,world_module", [("pipeline.train", "pipeline.worlds.languages"),
                                                ("pipeline.evaluate", "pipeline.worlds.code"),
                                                ("pipeline.report", "pipeline.worlds.kv_arithmetic")])
def test_folded_code_deps_hold_exactly_the_files_a_stage_runs(entry, world_module, tmp_path):
    """A stage's deps name a folder where it runs every file of it, to keep dvc.lock small: the folded list must
    hold every file the stage runs and no other file of the package (an unrun file in a folded folder would rerun
    the stage when edited), and adding a file to a folded folder unfolds it."""
    runs = set(closure(entry)) | set(closure(world_module))
    paths = stage_code(entry, world_module)
    package = {str(p.relative_to(ROOT)) for p in (ROOT / "pipeline").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert {f for f in package if covers(paths, f)} == runs
    assert len(paths) < len(runs)  # at least one folder folded (pipeline/composition and pipeline/training are)
    one_folder = next(p for p in paths if (ROOT / p).is_dir())
    assert folded(runs - {next(f for f in runs if f.startswith(one_folder + "/"))}).count(one_folder) == 0


@pytest.mark.parametrize("entry,world", [("pipeline.train", "code"), ("pipeline.evaluate", "code"),
                                         ("pipeline.build_data", "languages"), ("pipeline.report", "kv_arithmetic")])
def test_a_stage_depends_on_every_source_file_it_runs(entry, world):
    """Issue 29: stages left out tokenizer.py, stages.py, the trainer, code_dialect.py, so DVC called stale tables
    current. Every pipeline file a stage's process has loaded once its entry and world modules are imported and its
    data module has run its imports must be among the stage's DVC deps (derived from the import graph)."""
    p = load_params(ROOT / "params.yaml")
    stages = yaml.safe_load((ROOT / "dvc_stages.yaml").read_text())["dvc_stages"]
    key = {"pipeline.train": f"{world}/mA", "pipeline.evaluate": f"{world}/mB"}.get(entry, world)
    item = {"pipeline.train": "train", "pipeline.evaluate": "evaluate", "pipeline.build_data": "data"}.get(entry)
    code = set(stages[item][key]["code"]) if item else \
        set(next(r["code"] for r in stages["report"].values() if f"data/{world}/summary.json" in
                 [f"data/{w}/summary.json" for w in r["worlds"]]))
    module = p["worlds"][world]["module"]
    probe = (f"import sys, runpy, importlib; importlib.import_module({entry!r}); importlib.import_module({module!r}); "
             "print('\\n'.join(sorted(m.__file__ for m in list(sys.modules.values()) "
             "if getattr(m, '__file__', None) and m.__name__.split('.')[0] == 'pipeline')))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = {str(Path(f).resolve().relative_to(ROOT)) for f in r.stdout.split()}
    # the deps name folders where the stage runs every file of one (DVC hashes a folder whole)
    held = {f for f in [*loaded, *(str(p.relative_to(ROOT)) for p in (ROOT / "pipeline").rglob("*.py"))]
            if covers(sorted(code), f)}
    assert loaded and loaded <= held, sorted(loaded - held)
    assert {"pipeline/tokenization.py", "pipeline/stages.py", "pipeline/float_path.py"} <= held
    # and nothing it does not run: a file named in a docstring or comment (stages.py's prose names sweep.py) is not
    # a dependency, so editing the sweep tool leaves every published stage current
    assert "pipeline/sweep.py" not in held
    if entry == "pipeline.evaluate":  # the sandbox's scripts run as processes of their own, never imported
        assert {"pipeline/worlds/code_dialect.py", "pipeline/sandbox/_sandbox_boot.py",
                "pipeline/sandbox/_sandbox_protocol.py"} <= held
        # the metrics' `evaluate` scripts, which evaluate.load reads by path (not an import) when a set is scored
        assert {f"pipeline/benchmarks/metrics/{m}/{m}.py" for m in ("chrf", "exact_match", "gsm_accuracy",
                                                                      "pass_at_k")} <= held


@pytest.mark.slow
def test_a_report_stage_needs_only_the_models_its_table_reads():
    """`dvc repro report@table1` must not build Table 5's models: asked of DVC itself (its DAG from dvc.yaml)."""
    r = subprocess.run([sys.executable, "-m", "dvc", "dag", "--dot", "report@table1"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    upstream = set(re.findall(r'"(\w+@[^"]+)"', r.stdout))
    assert {f"train@kv_arithmetic/{m}" for m in ("vanilla", "mA", "mB", "calm")} <= upstream
    assert {f"evaluate@kv_arithmetic/{m}" for m in ("mA", "mB", "calm")} <= upstream
    p = load_params(ROOT / "params.yaml")
    table5_only = set(p["worlds"]["kv_arithmetic"]["models"]) - {"vanilla", "mA", "mB", "calm"}
    assert table5_only and not {s for s in upstream if s.split("/")[-1] in table5_only}


@pytest.mark.parametrize("override,message", [
    ("worlds.kv_arithmetic.models.calm.anchor=nope", "builds on 'nope'"),
    ("worlds.kv_arithmetic.models.mB.kind=magic", "unknown kind 'magic'"),
    ("reports.table1.blocks.kv_arithmetic.columns.CALM=ghost", "reads kv_arithmetic/ghost"),
])
def test_inconsistent_declarations_fail_in_one_line(override, message):
    with pytest.raises(PipelineError, match=message) as e:
        compose_params(["preset=micro", override])
    assert "\n" not in str(e.value)


def test_dvc_hydra_integration_composes_the_same_params(tmp_path, monkeypatch):
    """`dvc exp run -S ...` composes conf/ with DVC's own compose_and_dump, which finds the pipeline's resolver
    only through hydra_plugins/ (a fresh process, as DVC's); the resolver writes the stage maps beside the params
    file DVC writes, as `make params` would, and a stage DVC runs accepts the pair."""
    out = tmp_path / "params.yaml"
    overrides = ["worlds.kv_arithmetic.models.calm.seed=1", "+worlds.kv_arithmetic.models.vanilla.evaluate=true"]
    code = ("import sys; from dvc.utils.hydra import compose_and_dump; "
            f"compose_and_dump({str(out)!r}, {str(ROOT / 'conf')!r}, None, 'config', {str(ROOT)!r}, sys.argv[1:])")
    r = subprocess.run([sys.executable, "-c", code, *overrides], cwd=ROOT, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-2000:]
    composed = compose_params(overrides)
    with open(out) as f:
        assert yaml.safe_load(f) == composed
    assert "kv_arithmetic/vanilla" in stage_maps(composed)["evaluate"]  # a graph of its own, not the committed one
    assert stages_file(out).read_text() == stages_text(stage_maps(composed), composed[DIGEST_KEY])
    monkeypatch.setenv("DVC_STAGE", "evaluate@kv_arithmetic/vanilla")
    assert load_params(out) == composed


def test_a_stage_dvc_runs_refuses_a_graph_made_from_other_params(tmp_path, monkeypatch):
    """dvc.yaml reads the stage maps from dvc_stages.yaml, apart from params.yaml: a stages file left from other
    params, or a params.yaml edited after composing, is one line where the stage starts, never a silently wrong
    graph. Outside DVC (a sweep's job, a test) the stages file is not read."""
    dump_params(compose_params(["preset=micro", "world=[kv_arithmetic]"]), tmp_path / "params.yaml")
    other = tmp_path / "other"
    other.mkdir()
    dump_params(compose_params(["preset=micro", "world=[kv_arithmetic]", "+worlds.kv_arithmetic.models.vanilla.evaluate=true"]),
                other / "params.yaml")
    monkeypatch.setenv("DVC_STAGE", "build_data@kv_arithmetic")
    params_file, stages = tmp_path / "params.yaml", stages_file(tmp_path / "params.yaml")
    assert load_params(params_file)[DIGEST_KEY] != load_params(other / "params.yaml")[DIGEST_KEY]
    made = stages.read_bytes()

    stages.write_bytes(stages_file(other / "params.yaml").read_bytes())
    with pytest.raises(PipelineError, match="dvc_stages.yaml was derived from other params than"):
        load_params(params_file)
    stages.unlink()
    with pytest.raises(PipelineError, match="dvc_stages.yaml is missing"):
        load_params(params_file)
    stages.write_bytes(made)
    composed = params_file.read_text()
    params_file.write_text(composed.replace("\nseed: 0\n", "\nseed: 1\n"))
    with pytest.raises(PipelineError, match="was edited after it was composed"):
        load_params(params_file)
    monkeypatch.delenv("DVC_STAGE")
    assert load_params(params_file)["seed"] == 1  # not run by DVC: no graph to check

    # as DVC starts it: one line, nothing built
    env = {"PYTHONPATH": str(ROOT), "CALM_PARAMS": str(params_file), "PATH": "/usr/bin:/bin",
           "DVC_STAGE": "build_data@kv_arithmetic"}
    r = subprocess.run([sys.executable, "-m", "pipeline.build_data", "kv_arithmetic"], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "edited after it was composed" in r.stderr, \
        r.stderr[-2000:]
    assert not (tmp_path / "data").exists()


def test_check_names_a_stale_stages_file(tmp_path):
    """`python -m pipeline.params --check` compares dvc_stages.yaml with conf/ too, byte for byte."""
    from pipeline.params import copy_checkout

    repo = tmp_path / "repo"
    copy_checkout(ROOT, repo)
    (tmp_path / "shared").symlink_to(ROOT.parent / "shared")  # ../shared/benchmarks, as beside the checkout
    check = [sys.executable, "-m", "pipeline.params", "--check"]
    ok = subprocess.run(check, cwd=repo, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr[-2000:]
    stages = repo / "dvc_stages.yaml"
    stages.write_text(stages.read_text().replace("kv_arithmetic/calm:", "kv_arithmetic/kalm:", 1))
    r = subprocess.run(check, cwd=repo, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "dvc_stages.yaml differs" in r.stderr, \
        r.stderr[-2000:]


def test_the_paper_preset_fails_before_any_data_is_built(tmp_path):
    """Issue 29: `dvc exp run -S preset=paper` built 90 s of data (428 MB) before it said there is no GPU. The
    data stage now asks first: the device, then the hub for every model the world would download."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the paper preset's device check passes")
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    for overrides, message in ((["preset=paper", "world=[kv_arithmetic]"], "runtime.device is cuda but torch sees no GPU"),
                               (["preset=paper", "runtime=cpu", "world=[code]"], "names the hub model")):
        work = tmp_path / overrides[-1].split("[")[1][:-1]
        work.mkdir()
        dump_params(compose_params(overrides), work / "params.yaml")
        world = overrides[-1].split("[")[1][:-1]
        r = subprocess.run([sys.executable, "-m", "pipeline.build_data", world], cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and message in r.stderr, r.stderr[-2000:]
        assert not (work / "data").exists()


@pytest.mark.slow
def test_another_preset_builds_in_its_own_workspace_never_over_the_published_one(tmp_path):
    """Issue 29: a micro-preset `make params` + `dvc repro` rewrote the committed params.yaml, tables, metrics and
    dvc.lock entries. In a checkout whose dvc.lock git tracks, another preset now gets presets/<preset>/ (its own
    git repository, params.yaml, dvc.lock and outputs), and DVC's `-S preset=...` is refused there in one line."""
    from pipeline.params import copy_checkout

    repo = tmp_path / "repo"
    copy_checkout(ROOT, repo)
    (tmp_path / "shared").symlink_to(ROOT.parent / "shared")  # ../shared/benchmarks, as beside the checkout
    (repo / "real" / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")  # the real pipeline's published lock
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "published"]):
        subprocess.run(git + args, cwd=repo, check=True)
    published = {p: (repo / p).read_bytes() for p in ("params.yaml", "dvc_stages.yaml", "dvc.lock", "reports/table1.md")}
    make = [sys.executable, "-m", "pipeline.params", "preset=micro", "world=[kv_arithmetic]"]
    r = subprocess.run(make, cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0 and "presets/micro" in r.stdout, r.stderr[-2000:]
    work = repo / "presets" / "micro"
    assert load_params(work / "params.yaml") == compose_params(["preset=micro", "world=[kv_arithmetic]"])
    assert "kv_arithmetic" in stages_file(work / "params.yaml").read_text().split("dvc_stages:")[1]
    assert not (work / "dvc.lock").exists() and not (work / "reports" / "table1.md").exists()
    assert (work / "reports" / "kv_arithmetic" / "sweeps").is_dir()  # the report stage reads it (no records yet)
    assert (work / "pipeline" / "params.py").read_bytes() == (repo / "pipeline" / "params.py").read_bytes()
    (work / "data" / "built").write_text("kept")  # what the workspace built survives a refresh
    assert subprocess.run(make, cwd=repo, capture_output=True).returncode == 0
    assert (work / "data" / "built").read_text() == "kept"
    assert {p: (repo / p).read_bytes() for p in published} == published
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""
    # the real pipeline's preset: the same workspace, told to build by target (a bare `dvc repro` builds no real table)
    r = subprocess.run([sys.executable, "-m", "pipeline.params", "--pipeline", "real", "preset=micro"], cwd=repo,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "dvc repro real/dvc.yaml:report@table4_xtok" in r.stdout, r.stderr[-2000:]
    assert (work / "real" / "params.yaml").is_file() and not (work / "real" / "dvc.lock").exists()

    # DVC's Hydra integration (`dvc exp run -S preset=micro`): refused in the published workspace before it writes
    # params.yaml; allowed in the preset's own
    code = ("import os, sys; from dvc.utils.hydra import compose_and_dump; "
            "compose_and_dump('params.yaml', os.path.abspath('conf'), None, 'config', os.getcwd(), sys.argv[1:])")
    here = subprocess.run([sys.executable, "-c", code, "preset=micro", "world=[kv_arithmetic]"], cwd=repo,
                          capture_output=True, text=True)
    assert here.returncode != 0 and "make params OVERRIDES=preset=micro" in here.stderr, here.stderr[-2000:]
    assert {p: (repo / p).read_bytes() for p in published} == published  # the stage maps too
    (work / "dvc_stages.yaml").unlink()
    there = subprocess.run([sys.executable, "-c", code, "preset=micro", "world=[kv_arithmetic]"], cwd=work,
                           capture_output=True, text=True)
    assert there.returncode == 0, there.stderr[-2000:]
    assert (work / "dvc_stages.yaml").is_file()  # written beside the params.yaml DVC wrote


@pytest.mark.slow
def test_real_model_worlds_are_a_pipeline_of_their_own_that_a_bare_repro_never_builds():
    """Issue 29: `make table4-real` rewrote the committed params.yaml to build its world, and the real-model tables
    had no lock entries. Their worlds are now stages of real/dvc.yaml (the same template, against real/params.yaml),
    asked of DVC itself: a bare `dvc repro` (dvc.yaml) names none of them; their tables build from the root."""
    with open(ROOT / "real" / "params.yaml") as f:
        assert yaml.safe_load(f) == compose_params(config_name="real"), "real/params.yaml drifted: run `make params`"
    # the same template as a copy, not a link: git stores a link as its target's name, so in a committed revision
    # DVC read real/dvc.yaml as the text "../dvc.yaml" and `dvc metrics diff HEAD~1` compared nothing
    template = ROOT / "real" / "dvc.yaml"
    assert not template.is_symlink() and template.read_bytes() == (ROOT / "dvc.yaml").read_bytes(), \
        "real/dvc.yaml differs from dvc.yaml: run `make params`"
    from dvc.repo import Repo

    stages = list(Repo(str(ROOT)).index.stages)
    main = {s.name for s in stages if s.path_in_repo == "dvc.yaml"}
    real = {s.name: s for s in stages if s.path_in_repo == "real/dvc.yaml"}
    real_worlds = set(load_params(ROOT / "real" / "params.yaml")["worlds"])
    assert real_worlds == {"code_real", "languages_real", "code_xtok", "languages_xtok"}
    assert not {n for n in main if any(w in n for w in real_worlds)} and "report@table1" in main
    assert {f"report@{t}" for t in ("table2_real", "table3_real", "table4_real", "table4_xtok", "table2_xtok")} <= set(real)
    assert "figure@figure2_xtok" in real
    calm = real["train@code_real/calm"]
    assert Path(calm.wdir) == ROOT and calm.cmd.startswith("CALM_PARAMS=real/params.yaml ")
    params_files = {d.def_path for d in calm.deps if type(d).__name__ == "ParamsDependency"}
    assert params_files == {"real/params.yaml"}
    assert {"models/code_real/mA", "models/code_real/mB"} <= {str(Path(d.fs_path).relative_to(ROOT)) for d in calm.deps}


def _leaf(params: dict, key: str):
    node = params
    for part in key.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def test_show_prints_every_value_the_preset_gives_and_nothing_else():
    r = subprocess.run([sys.executable, "-m", "pipeline.params", "--show", "preset=micro"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    shown = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert len(shown) == len(r.stdout.splitlines())  # one line per key
    # what the preset's own files set is printed as they set it
    size = yaml.safe_load((ROOT / "conf" / "size" / "kv_arithmetic" / "micro.yaml").read_text())["worlds"]["kv_arithmetic"]
    assert shown["preset"] == "micro"
    assert yaml.safe_load(shown["worlds.kv_arithmetic.data.n_keys"]) == size["data"]["n_keys"] == 20
    assert yaml.safe_load(shown["worlds.kv_arithmetic.models.calm.train.steps"]) == size["models"]["calm"]["train"]["steps"]
    assert yaml.safe_load(shown["worlds.kv_arithmetic.data.operators"]) == ["+"]
    # every printed value is the composed one, and every composed value but the derived stage maps is printed
    params = compose_params(["preset=micro"])
    for key, text in shown.items():
        assert yaml.safe_load(text) == _leaf(params, key), key
    assert not any(k.startswith("dvc_stages") for k in shown)
    assert {k.split(".")[0] for k in shown} == set(params) - {DIGEST_KEY}


def test_show_writes_nothing_and_a_bad_preset_is_one_line(tmp_path):
    before = (ROOT / "params.yaml").read_bytes()
    r = subprocess.run([sys.executable, "-m", "pipeline.params", "--show", "preset=nope"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "unknown preset 'nope'" in r.stderr and "Traceback" not in r.stderr
    assert (ROOT / "params.yaml").read_bytes() == before


def test_a_variant_copies_every_field_of_its_reference_but_what_it_overlays(tmp_path):
    """A field added to calm.yaml (or set on a world's calm) reaches every variant with no other edit; what the
    variant states wins, and its seed stays its own (pipeline.params.inherit_variants)."""
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    calm = conf / "composition" / "calm.yaml"
    calm.write_text(calm.read_text() + "extra_field: {depth: 3, tags: [a, b]}\n")
    world = "worlds.kv_arithmetic.models"
    params = compose_params(["preset=micro", f"{world}.calm.loss_until='='", f"{world}.calm.seed=5",
                             f"++{world}.encoder.anchor_replay=0.25"], conf_dir=conf)
    models = params["worlds"]["kv_arithmetic"]["models"]
    overlays = {"vanilla_mA": {"augmenting"}, "random_mA": {"augmenting"}, "encoder": {"composition", "anchor_replay"},
                "lora": {"kind", "init", "lora"}}
    for name, own in overlays.items():
        variant = models[name]
        assert variant["variant_of"] == "calm"
        assert variant["extra_field"] == {"depth": 3, "tags": ["a", "b"]}, name  # added to the reference only
        assert variant["loss_until"] == "=", name  # set on the world's calm (the command line here)
        assert variant["seed"] is None, name      # never the reference's
        for key, value in models["calm"].items():
            if key not in own | {"seed"}:
                assert variant[key] == value, (name, key)
    assert models["encoder"]["anchor_replay"] == 0.25 and models["calm"]["anchor_replay"] != 0.25
    assert models["encoder"]["composition"] == {**models["calm"]["composition"], "mode": "encoder"}
    assert models["vanilla_mA"]["augmenting"] == ["vanilla"] and models["lora"]["kind"] == "lora"
    assert list(models["lora"])[:len(models["calm"])] == list(models["calm"])  # the reference's order, then its own


def test_a_variant_of_no_sibling_is_one_line():
    with pytest.raises(PipelineError, match="variant_of 'nope' is not a sibling composition") as e:
        compose_params(["preset=micro", "worlds.kv_arithmetic.models.encoder.variant_of=nope"])
    assert "\n" not in str(e.value)


def _arch_nodes(node, where=""):
    """Every mapping written under an `arch` key of a conf file: an architecture stated inline."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "arch" and isinstance(v, dict):
                yield f"{where}.{k}"
            yield from _arch_nodes(v, f"{where}.{k}")


def test_architectures_live_only_in_conf_model_and_each_is_used():
    model_files = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "conf" / "model").glob("*.yaml")}
    inline, selected = [], set()
    for path in (ROOT / "conf").rglob("*.yaml"):
        if path.parent.name == "model":
            continue
        conf = yaml.safe_load(path.read_text()) or {}
        inline += [f"{path.relative_to(ROOT)}{k}" for k in _arch_nodes(conf)]
        for entry in conf.get("defaults") or []:  # `/model@<pkg>: name` (a world) or `/model/name@<pkg>` (a size)
            text = entry if isinstance(entry, str) else next(f"{k}: {v}" for k, v in entry.items())
            if text.startswith("/model/"):
                selected.add(text[len("/model/"):].split("@")[0])
            elif text.startswith("/model@"):
                selected.add(text.split(": ")[1])
    assert not inline, f"architectures written inline (name one of conf/model/ instead): {inline}"
    assert selected == set(model_files), f"unused: {set(model_files) - selected}; missing: {selected - set(model_files)}"
    real = "world=[code_real,languages_real,code_xtok,languages_xtok]"  # conf/real.yaml's worlds
    for overrides in (["preset=micro"], ["preset=cpu"], ["preset=paper"], ["preset=micro", real], ["preset=cpu", real]):
        for world, w in compose_params(overrides)["worlds"].items():  # each arch that composes is one named file
            for name, model in w["models"].items():
                if "arch" in model:
                    assert model["arch"] in model_files.values(), (overrides, world, name, model["arch"])
