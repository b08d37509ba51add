"""Loaders: real formats from the shared copies; a clear error when no source works."""
import time
from pathlib import Path

import pytest

from pipeline.benchmarks import data
from pipeline.benchmarks.config import available_benchmarks, load_benchmark_config
from pipeline.benchmarks.errors import BenchmarkError, DataUnavailableError
from pipeline.benchmarks.tasks import build_task, resolve_local_path

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmarks").resolve()
needs_shared = pytest.mark.skipif(not SHARED.is_dir(),
                                  reason=f"real benchmark copies not found at {SHARED}")


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_every_benchmark_has_a_config_that_builds():
    assert available_benchmarks() == ["codexglue", "flores", "gsm8k", "humaneval", "mbpp",
                                      "mgsm"]
    for name in available_benchmarks():
        config = load_benchmark_config(name)
        assert config["name"] == name and "hub_id" in config["data"]
        build_task(config)


def test_neither_local_copy_nor_hub_gives_one_clear_error(offline, tmp_path):
    for name in available_benchmarks():
        config = load_benchmark_config(name, [f"data.local_dir={tmp_path / 'missing'}"]
                                       if name != "humaneval" else
                                       [f"data.local_file={tmp_path / 'missing.jsonl'}"])
        if name == "mgsm":  # its exemplar chains of thought come from GSM8K
            config["gsm8k_data"]["local_dir"] = str(tmp_path / "missing")
        start = time.monotonic()
        with pytest.raises(DataUnavailableError) as error:
            build_task(config).items()
        message = str(error.value)
        assert "\n" not in message
        assert "benchmark.data.local_" in message and config["data"]["hub_id"] in message
        assert time.monotonic() - start < 5


def test_unreachable_hub_fails_fast_without_offline_flag(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")  # no such host
    start = time.monotonic()
    with pytest.raises(DataUnavailableError, match="no local copy configured.*hub.invalid"):
        data.load_gsm8k("test", local_dir=None, hub_id="openai/gsm8k")
    assert time.monotonic() - start < 10


def test_unknown_benchmark_and_language_are_clear_errors():
    with pytest.raises(BenchmarkError, match="unknown benchmark 'nope'"):
        load_benchmark_config("nope")
    with pytest.raises(BenchmarkError, match="unknown MGSM language"):
        data.load_mgsm("xx", local_dir="/nonexistent", hub_id=None)


def test_malformed_jsonl_is_a_one_line_error(tmp_path):
    (tmp_path / "test.jsonl").write_text('{"question": "q", "answer": "#### 1"}\nnot json\n')
    with pytest.raises(BenchmarkError, match=r"test.jsonl:2: not JSON"):
        data.load_gsm8k("test", local_dir=str(tmp_path), hub_id=None)


@needs_shared
def test_real_formats_load_with_their_documented_sizes():
    assert len(data.load_flores("eng_Latn", local_dir=str(SHARED / "flores200"),
                                hub_id=None)) == 1012
    assert len(data.load_gsm8k("train", local_dir=str(SHARED / "gsm8k"), hub_id=None)) == 7473
    gsm8k_test = data.load_gsm8k("test", local_dir=str(SHARED / "gsm8k"), hub_id=None)
    assert len(gsm8k_test) == 1319 and gsm8k_test[0]["answer"] == "18"
    german = data.load_mgsm("de", local_dir=str(SHARED / "mgsm"), hub_id=None)
    assert len(german) == 250 and german[0]["answer"] == "18"
    mbpp = data.load_mbpp(local_dir=str(SHARED / "mbpp"), hub_id=None)
    assert sorted(mbpp) == list(range(1, 975))
    assert len(data.load_humaneval(local_file=None, hub_id=None)) == 164  # package's copy
    ruby = data.load_codexglue("ruby", "test", local_dir=str(SHARED / "codexglue_code_to_text"),
                               hub_id=None)
    assert len(ruby) == 1261 and {"code", "docstring"} <= set(ruby[0])


@needs_shared
def test_data_root_fills_each_benchmark_local_path():
    config = resolve_local_path(load_benchmark_config("gsm8k"), SHARED)
    assert config["data"]["local_dir"] == str(SHARED / "gsm8k")
    explicit = resolve_local_path(load_benchmark_config("gsm8k", ["data.local_dir=/x"]), SHARED)
    assert explicit["data"]["local_dir"] == "/x"  # an explicit path wins
