"""A saved LoRA adapter is the same bytes in every process: peft keeps `target_modules` as a set, whose order moves
with the process's string hash seed, and DVC hashes the adapter directory (a fresh clone's `dvc repro` wrote a
train@<world>/lora output whose hash differed from dvc.lock's until pipeline/training/kinds.py sorted it)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SAVE = """
import sys, torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM
from pipeline.training.kinds import Lora
torch.manual_seed(0)
base = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))
names = [f"model.layers.{i}.{m}" for i in range(2) for m in ("self_attn.q_proj", "self_attn.k_proj",
         "self_attn.v_proj", "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj")]
model = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=names, task_type="CAUSAL_LM"))
Lora().save(model, sys.argv[1])
"""


@pytest.mark.slow
def test_the_same_adapter_saved_under_two_hash_seeds_is_the_same_bytes(tmp_path):
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT), CALM_THREADS="1")
        done = subprocess.run([sys.executable, "-c", SAVE, str(out)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        outs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert "adapter_config.json" in outs[0]
    assert outs[0].keys() == outs[1].keys()
    differing = [name for name in outs[0] if outs[0][name] != outs[1][name]]
    assert not differing, f"files that differ between hash seeds: {differing}"
