"""Bad input is one line on stderr and exit code 2, never a traceback (issue 29, item 5): a seed that is not an
integer, a truncated model file, a deleted data file, a truncated file in a Trainer checkpoint (removed with one
line, and the previous checkpoint resumed), `pipeline.benchmarks --help` / `limit=abc`, and a benchmark file that
does not match its SHA256SUMS or does not parse."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.params import compose_params, dump_params

ROOT = Path(__file__).resolve().parents[2]
SHARED = (ROOT / ".." / "shared" / "benchmarks").resolve()
WORLD, MODEL = "kv_arithmetic", "mB"


def _env(workdir: Path) -> dict:
    return dict(os.environ, WANDB_MODE="disabled", PYTHONPATH=str(ROOT), CALM_THREADS="1",
                CALM_PARAMS=str(workdir / "params.yaml"))


def _run(workdir: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workdir, env=_env(workdir), capture_output=True, text=True)


def _one_line(r: subprocess.CompletedProcess, *words: str) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), \
        f"rc={r.returncode}, {len(lines)} lines: {r.stderr[-1500:]}"
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The micro kv world's data and tokenizer, mB trained 8 steps without interruption (checkpoints every 2), and
    beside it killed_checkpoints/: those of the same run killed after step 5 (checkpoint-2 and checkpoint-4)."""
    w = tmp_path_factory.mktemp("bad_input") / "work"
    w.mkdir()
    block = f"worlds.{WORLD}.models.{MODEL}.train"
    dump_params(compose_params(["preset=micro", f"{block}.steps=8", f"{block}.save_steps=2"]), w / "params.yaml")
    for args in (["-m", "pipeline.build_data", WORLD], ["-m", "pipeline.tokenizer", WORLD],
                 ["-m", "pipeline.train", f"{WORLD}/{MODEL}"]):
        r = _run(w, *args)
        assert r.returncode == 0, r.stderr[-2000:]
    r = _run(w, str(ROOT / "tests" / "support" / "_kill_at.py"), "step", "5", f"{WORLD}/{MODEL}")
    assert r.returncode == -9, r.stderr[-2000:]
    shutil.move(w / "models" / ".checkpoints", w.parent / "killed_checkpoints")
    return w


def _copy(workdir: Path, tmp_path: Path) -> Path:
    w = tmp_path / "work"
    shutil.copytree(workdir, w)
    return w


# ---- config values --------------------------------------------------------------------------------------------

def test_a_seed_that_is_not_an_integer_is_refused_where_params_are_composed_and_read(tmp_path):
    r = _run(tmp_path, "-m", "pipeline.params", "preset=micro", "seed=abc")
    _one_line(r, "seed must be an integer", "'abc'")
    assert not (tmp_path / "params.yaml").exists()
    r = _run(tmp_path, "-m", "pipeline.params", "preset=micro", f"+worlds.{WORLD}.models.{MODEL}.seed=-1")
    _one_line(r, f"worlds.{WORLD}.models.{MODEL}.seed", "-1")
    params = compose_params(["preset=micro"])
    dump_params(params, tmp_path / "params.yaml")
    path = tmp_path / "params.yaml"  # then edited by hand (dump_params itself refuses the seed, deriving the stage maps)
    text = path.read_text()
    assert text.count("\nseed: 0\n") == 1
    path.write_text(text.replace("\nseed: 0\n", "\nseed: abc\n"))
    (tmp_path / "data" / WORLD).mkdir(parents=True)
    _one_line(_run(tmp_path, "-m", "pipeline.build_data", WORLD), "seed must be an integer")
    assert (tmp_path / "data" / WORLD).is_dir()


# ---- files a stage reads ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_truncated_model_file_is_one_line_naming_it(workdir, tmp_path):
    w = _copy(workdir, tmp_path)
    weights = w / "models" / WORLD / MODEL / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    _one_line(_run(w, "-m", "pipeline.evaluate", f"{WORLD}/{MODEL}"), "model.safetensors is truncated")
    os.truncate(weights, 5)
    _one_line(_run(w, "-m", "pipeline.evaluate", f"{WORLD}/{MODEL}"), "model.safetensors is truncated")


@pytest.mark.slow
def test_a_deleted_data_file_under_train_is_one_line_naming_it(workdir, tmp_path):
    w = _copy(workdir, tmp_path)
    (w / "data" / WORLD / "num_math_train.jsonl").unlink()
    _one_line(_run(w, "-m", "pipeline.train", f"{WORLD}/{MODEL}"), "num_math_train.jsonl", "missing upstream output")


# ---- Trainer checkpoints ----------------------------------------------------------------------------------------

DAMAGE = [(name, "truncate") for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
                                         "training_args.bin", "trainer_state.json")]
DAMAGE += [(name, "delete") for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
                                        "trainer_state.json")]


@pytest.mark.slow
@pytest.mark.parametrize("name,damage", DAMAGE, ids=[f"{d}-{n}" for n, d in DAMAGE])
def test_a_checkpoint_whose_files_do_not_verify_is_removed_and_the_previous_one_used(workdir, tmp_path, capsys,
                                                                                     name, damage):
    from pipeline.training.trainer import last_complete_checkpoint

    run_dir = tmp_path / "run"
    shutil.copytree(next((workdir.parent / "killed_checkpoints").iterdir()), run_dir)
    assert sorted(p.name for p in run_dir.iterdir()) == ["checkpoint-2", "checkpoint-4"]
    path = run_dir / "checkpoint-4" / name
    if damage == "truncate":
        os.truncate(path, path.stat().st_size - 7)
    else:
        path.unlink()
    assert last_complete_checkpoint(run_dir) == run_dir / "checkpoint-2"
    assert not (run_dir / "checkpoint-4").exists()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "checkpoint-4" in lines[0] and (name in lines[0] or "missing" in lines[0]), lines


@pytest.mark.slow
def test_a_rerun_after_a_truncated_checkpoint_file_resumes_from_the_previous_checkpoint(workdir, tmp_path):
    w = _copy(workdir, tmp_path)
    straight = json.loads((w / "models" / WORLD / MODEL / "train_info.json").read_text())
    shutil.rmtree(w / "models" / WORLD / MODEL)
    shutil.copytree(workdir.parent / "killed_checkpoints", w / "models" / ".checkpoints")
    optimizer = next((w / "models" / ".checkpoints").glob("*/checkpoint-4/optimizer.pt"))
    os.truncate(optimizer, 1000)
    r = _run(w, "-m", "pipeline.train", f"{WORLD}/{MODEL}")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "checkpoint-4: optimizer.pt is truncated" in r.stderr and "resuming from" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    info = json.loads((w / "models" / WORLD / MODEL / "train_info.json").read_text())
    assert json.loads((w / "models" / ".runs" / WORLD / f"{MODEL}.json").read_text())["resumed_from"].endswith("checkpoint-2")
    assert info == straight  # how the run went (its time, its resume) is kept beside the model, not in it


# ---- python -m pipeline.benchmarks ------------------------------------------------------------------------------

def test_benchmarks_help_prints_the_usage(tmp_path):
    r = _run(tmp_path, "-m", "pipeline.benchmarks", "--help")
    assert r.returncode == 0 and "python -m pipeline.benchmarks benchmark=<name>" in r.stdout, r.stderr[-1500:]


@pytest.mark.parametrize("arg,key", [("limit=abc", "limit"), ("limit=0", "limit"), ("batch_size=x", "batch_size")])
def test_benchmarks_a_bad_number_names_its_key(tmp_path, arg, key):
    _one_line(_run(tmp_path, "-m", "pipeline.benchmarks", arg), f"{key} must be a positive integer")


# ---- benchmark files --------------------------------------------------------------------------------------------

def _gsm8k_copy(root: Path, with_sums: bool = True) -> Path:
    rows = [{"question": f"What is {i} + 1?", "answer": f"{i} + 1 = {i + 1}\n#### {i + 1}"} for i in range(50)]
    path = root / "gsm8k" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if with_sums:
        (root / "SHA256SUMS").write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  gsm8k/test.jsonl\n")
    return path


def test_a_benchmark_file_is_checked_against_its_sha256sums(tmp_path):
    from pipeline.benchmarks import data
    from pipeline.benchmarks.errors import BenchmarkError

    path = _gsm8k_copy(tmp_path)
    assert len(data.load_gsm8k("test", local_dir=str(tmp_path / "gsm8k"), hub_id=None)) == 50
    os.truncate(path, path.stat().st_size - 40)  # the last line cut in half
    with pytest.raises(BenchmarkError) as error:
        data.load_gsm8k("test", local_dir=str(tmp_path / "gsm8k"), hub_id=None)
    message = str(error.value)
    assert "\n" not in message and str(path) in message and "does not match" in message and "SHA256SUMS" in message


def test_a_benchmark_file_without_checksums_that_does_not_parse_is_one_line_naming_it(tmp_path):
    from pipeline.benchmarks import data
    from pipeline.benchmarks.errors import BenchmarkError

    path = _gsm8k_copy(tmp_path, with_sums=False)
    os.truncate(path, path.stat().st_size - 40)
    with pytest.raises(BenchmarkError) as error:
        data.read_benchmark_jsonl(path)
    assert "\n" not in str(error.value) and str(error.value).startswith(f"{path}:50: not JSON")


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"real benchmark copies not found at {SHARED}")
def test_the_language_world_names_a_truncated_benchmark_file(tmp_path):
    bench = tmp_path / "benchmarks"
    (bench / "gsm8k").mkdir(parents=True)
    (bench / "flores200").symlink_to(SHARED / "flores200")
    shutil.copy(SHARED / "gsm8k" / "train.jsonl", bench / "gsm8k")
    shutil.copy(SHARED / "SHA256SUMS", bench)
    test = bench / "gsm8k" / "test.jsonl"
    test.write_bytes((SHARED / "gsm8k" / "test.jsonl").read_bytes()[:300_000])
    dump_params(compose_params(["preset=micro", "world=[languages]", f"worlds.languages.data.benchmarks_dir={bench}"]),
                tmp_path / "params.yaml")
    _one_line(_run(tmp_path, "-m", "pipeline.build_data", "languages"), f"{test}: SHA256", "does not match")


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"real benchmark copies not found at {SHARED}")
def test_benchmark_files_lists_what_a_world_reads_and_the_shared_copies_verify():
    from pipeline.benchmarks.data import verify_benchmark_file
    from pipeline.worlds import benchmark_files

    params = compose_params(["preset=micro", "world=[kv_arithmetic,languages,code]",
                             f"worlds.languages.data.benchmarks_dir={SHARED}",
                             f"worlds.code.data.benchmarks_dir={SHARED}"])
    assert benchmark_files(params, "kv_arithmetic") == []
    languages = benchmark_files(params, "languages")
    assert [Path(p).relative_to(SHARED).as_posix() for p in languages] == [
        "flores200/devtest/eng_Latn.devtest", "gsm8k/train.jsonl", "gsm8k/test.jsonl"]
    code = benchmark_files(params, "code")
    assert {Path(p).name for p in code} == {"mbpp.jsonl", "test.jsonl", "HumanEval.jsonl.gz", "train.jsonl"}
    for p in languages + code:
        assert verify_benchmark_file(p) == Path(p)
