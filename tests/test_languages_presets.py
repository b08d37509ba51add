"""The language world's presets: the paper preset names real hub models and fails offline with one clear line per
hub id (never a traceback, never minutes of retries); the micro and cpu presets share one code path with it."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.composition.base_models import load_causal_lm
from pipeline.errors import UserError
from pipeline.params import compose_params, dump_params

ROOT = Path(__file__).resolve().parents[1]


def _hub_ids(params: dict) -> list[str]:
    w = params["worlds"]["languages"]
    ids = [w["tokenizer"]["pretrained"]] if w["tokenizer"].get("pretrained") else []
    models = w["models"]
    return ids + [m["init"] for m in models.values() if isinstance(m.get("init"), str) and "/" in m["init"]
                  and m["init"] not in models]


def test_paper_preset_names_real_models_that_share_a_tokenizer():
    params = compose_params(["world=[languages]", "preset=paper"])
    w = params["worlds"]["languages"]
    assert _hub_ids(params) == ["google/gemma-3-1b-pt", "google/gemma-3-270m", "google/gemma-3-1b-pt"]
    assert w["models"]["mA"]["init"] == "vanilla" and w["models"]["skyline"]["init"] == "mB"
    assert w["models"]["calm"]["composition"]["connections"] is None  # the paper's every-4th-layer default
    assert w["data"]["segment_words"] is None and params["runtime"]["device"] == "cuda"
    # the cpu and micro presets are the same declaration at other sizes
    for preset in ("cpu", "micro"):
        other = compose_params(["world=[languages]", f"preset={preset}"])["worlds"]["languages"]
        assert set(other["models"]) == set(w["models"]) and set(other["evaluation"]["sets"]) == set(w["evaluation"]["sets"])


def test_every_hub_id_of_the_paper_preset_fails_offline_with_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: nothing to fall back on
    params = compose_params(["world=[languages]", "preset=paper", "runtime=cpu"])
    for model in ("google/gemma-3-270m", "google/gemma-3-1b-pt"):
        start = time.monotonic()
        with pytest.raises(UserError) as error:
            load_causal_lm(model)
        assert "\n" not in str(error.value) and model in str(error.value) and time.monotonic() - start < 5
    # the tokenizer stage, as DVC runs it: exit 2, one line naming the hub id
    dump_params(params, tmp_path / "params.yaml")
    env = dict(os.environ, CALM_PARAMS=str(tmp_path / "params.yaml"), HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"),
               PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "pipeline.tokenizer", "languages"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "google/gemma-3-1b-pt" in lines[0], r.stderr
