"""The composition's public API as a new user meets it: options by keyword, one-line errors, the caller's models
left as they were, weight fingerprints, and encoder mode that cannot read ahead."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from tests.support.tiny_models import FAMILIES, VOCAB, randomize_composition, tiny_model
from tests.support.user_errors import one_line_error

from pipeline.composition import (
    CALM_OPTIONS,
    CALMConfig,
    CALMForCausalLM,
    CompositionConfigError,
    CompositionInputError,
    CompositionLoadError,
    CrossAttention,
)
from pipeline.composition.base_models import decoder_layers, fingerprint, legacy_fingerprint

ROOT = Path(__file__).resolve().parents[3]


def anchor_model(family="llama", seed=0):
    return tiny_model(family, width=64, layers=4, heads=4, seed=seed)


def augmenting_model(family="gpt2", seed=1):
    return tiny_model(family, width=32, layers=6, heads=2, seed=seed)


def random_ids(batch, length, seed=0):
    return torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


# ----- options: one home, the CALMConfig ------------------------------------------------------------------------
NON_DEFAULT = {
    "mode": "encoder",
    "num_heads": 8,
    "normalize_inputs": False,
    "rotary": False,
    "rotary_theta": 500.0,
    "final_norm": True,
    "attention_dropout": 0.1,
    "augmenting_dropout": 0.2,
    "recency_bias": True,
    "layers_per_connection": 2,
}
BRIDGE_ATTRIBUTES = ("num_heads", "normalize_inputs", "rotary", "rotary_theta", "attention_dropout", "augmenting_dropout",
                     "recency_bias")
# these need two tokenizers (a CALMProcessor): read_pending is taken and checked in test_alignment.py, lexical_start
# in test_lexical_start.py
TWO_TOKENIZER_OPTIONS = {"read_pending", "lexical_start"}


def test_the_option_names_are_the_config_fields_and_from_models_takes_each():
    assert set(CALM_OPTIONS) == set(NON_DEFAULT) | {"connections"} | TWO_TOKENIZER_OPTIONS
    defaults = CALMConfig()
    for name in set(CALM_OPTIONS[1:]) - TWO_TOKENIZER_OPTIONS:
        assert hasattr(defaults, name), name
        assert getattr(defaults, name) != NON_DEFAULT[name] or name == "num_heads", name
    calm = CALMForCausalLM.from_models(anchor_model(), augmenting_model(), **NON_DEFAULT)
    for name, value in NON_DEFAULT.items():
        assert getattr(calm.config, name) == value, name
    bridges = [m for m in calm.modules() if isinstance(m, CrossAttention)]
    assert len(bridges) == 3  # 6 mA layers, one connection per 2
    for bridge in bridges:
        for name in BRIDGE_ATTRIBUTES:
            assert getattr(bridge, name) == NON_DEFAULT[name], name
        assert bridge.head_dim == 64 // 8


def test_cross_attention_reads_its_options_from_the_config():
    config = CALMConfig(num_heads=2, normalize_inputs=False, rotary=False, rotary_theta=7.0, attention_dropout=0.3,
                        augmenting_dropout=0.4)
    bridge = CrossAttention(config, 32, 64)
    assert (bridge.num_heads, bridge.head_dim) == (2, 32)
    assert (bridge.normalize_inputs, bridge.rotary, bridge.rotary_theta) == (False, False, 7.0)
    assert (bridge.attention_dropout, bridge.augmenting_dropout) == (0.3, 0.4)
    assert bridge.f_proj.weight.shape == (64, 32) and torch.equal(bridge.o_proj.weight, torch.zeros(64, 64))
    one_line_error(CompositionConfigError, CrossAttention, CALMConfig(), 32, 64)  # num_heads not filled in


def test_a_conf_block_goes_straight_through_and_none_means_the_default():
    block = yaml.safe_load((ROOT / "conf" / "composition" / "calm.yaml").read_text())["composition"]
    assert set(block) <= set(CALM_OPTIONS)
    calm = CALMForCausalLM.from_models(anchor_model(), augmenting_model(), **block)
    nulls = CALMForCausalLM.from_models(anchor_model(), augmenting_model(), **{k: None for k in CALM_OPTIONS})
    plain = CALMForCausalLM.from_models(anchor_model(), augmenting_model())
    for other in (calm, nulls):
        assert other.config.to_dict() == plain.config.to_dict()
    assert plain.config.num_heads == 4  # the anchor's head count, written into the config


def test_the_keywords_of_existing_callers_still_work():
    # as in experiments/table1/composition_experiment.py and pipeline/training/kinds.py
    calm = CALMForCausalLM.from_models(anchor=anchor_model(), augmenting=[augmenting_model()],
                                       connections=[[(1, 1), (5, 3)]], num_heads=None, final_norm=False,
                                       attention_dropout=0.0, augmenting_dropout=0.0)
    assert calm.config.augmenting[0]["connections"] == [[1, 1], [5, 3]]


def test_an_unknown_option_fails_in_one_line_naming_the_valid_ones():
    message = one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor_model(), augmenting_model(),
                             num_head=4, dropout=0.1)
    assert "unknown options 'dropout', 'num_head'" in message
    assert all(name in message for name in CALM_OPTIONS)


@pytest.mark.parametrize("num_heads", [0, -4, 2.0, "4", True, 5, 3])
def test_bad_num_heads_fail_in_one_line_in_the_config_and_in_from_models(num_heads):
    message = one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor_model(), augmenting_model(),
                             num_heads=num_heads)
    assert message.startswith("num_heads must be a positive integer dividing the anchor width 64")
    assert message.endswith(f"not {num_heads!r}")
    config_message = one_line_error(CompositionConfigError, CALMConfig, anchor={"hidden_size": 64},
                                    num_heads=num_heads)
    assert config_message == message
    if num_heads not in (5, 3):  # without an anchor only the divisibility cannot be checked
        one_line_error(CompositionConfigError, CALMConfig, num_heads=num_heads)


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8, 16])
def test_every_head_count_dividing_the_width_works(num_heads):
    calm = randomize_composition(CALMForCausalLM.from_models(anchor_model(), augmenting_model(), num_heads=num_heads))
    with torch.no_grad():
        logits = calm(input_ids=random_ids(2, 5)).logits
    assert calm.config.num_heads == num_heads and torch.isfinite(logits).all()


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("rotary", "yes", "rotary must be true or false"),
        ("final_norm", 1, "final_norm must be true or false"),
        ("rotary_theta", 0, "rotary_theta must be a positive number"),
        ("attention_dropout", "0.1", "attention_dropout must be in [0, 1)"),
        ("layers_per_connection", 0, "layers_per_connection must be a positive integer"),
        ("mode", "sideways", "mode must be one of"),
    ],
)
def test_other_bad_option_values_fail_in_one_line(option, value, message):
    assert one_line_error(CompositionConfigError, CALMForCausalLM.from_models, anchor_model(), augmenting_model(),
                          **{option: value}).startswith(message)


# ----- the caller's models --------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_from_models_leaves_the_callers_augmenting_model_whole(family):
    augmenting = augmenting_model(family)
    ids = random_ids(2, 9)
    config_before = augmenting.config.to_dict()
    with torch.no_grad():
        before = augmenting(input_ids=ids).logits
    tensors = {t.data_ptr() for t in augmenting.state_dict().values()}
    calm = randomize_composition(CALMForCausalLM.from_models(anchor_model(), augmenting, connections=[(2, 3)]))
    with torch.no_grad():
        calm(input_ids=ids)  # a composition forward in between: its hooks on the shared layers stay silent
        after = augmenting(input_ids=ids).logits
    assert torch.equal(before, after)
    assert len(decoder_layers(augmenting)) == 6 and augmenting.config.to_dict() == config_before
    assert augmenting.get_output_embeddings() is not None  # its LM head too
    # The composition runs mA's first 3 layers, which are the caller's own modules: no weight was copied.
    assert len(calm._augmenting_layers[0]) == 3
    assert all(calm._augmenting_layers[0][i] is decoder_layers(augmenting)[i] for i in range(3))
    assert {p.data_ptr() for p in calm.augmenting.parameters()} <= tensors


def test_the_composition_does_not_need_the_callers_object_once_built():
    augmenting = augmenting_model("llama")
    calm = randomize_composition(CALMForCausalLM.from_models(anchor_model(), augmenting, connections=[(2, 3)]))
    ids = random_ids(2, 9)
    with torch.no_grad():
        before = calm(input_ids=ids).logits
    import gc
    import weakref

    head = weakref.ref(augmenting.lm_head)
    dropped = weakref.ref(decoder_layers(augmenting)[5])
    del augmenting
    gc.collect()
    assert head() is None and dropped() is None  # the LM head and unused layers are freed with the caller's object
    with torch.no_grad():
        assert torch.equal(calm(input_ids=ids).logits, before)


# ----- fingerprints ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_changing_any_one_weight_tensor_changes_the_fingerprint(family):
    model = anchor_model(family)
    reference = fingerprint(model)
    assert reference.startswith("w2:") and reference == fingerprint(anchor_model(family))
    state = model.state_dict()
    generator = torch.Generator().manual_seed(0)
    checked = 0
    for name, tensor in state.items():
        if not tensor.is_floating_point():
            continue
        original = tensor.clone()
        with torch.no_grad():
            tensor.add_(torch.randn(tensor.shape, generator=generator) * 1e-3)
        assert fingerprint(model) != reference, f"{family}: {name} changed but the fingerprint did not"
        with torch.no_grad():
            tensor.copy_(original)
        checked += 1
    assert checked >= 10 and fingerprint(model) == reference


@pytest.mark.slow
def test_the_fingerprint_is_the_same_in_another_process():
    script = (
        "import sys; sys.path[:0] = [{root!r}, {tests!r}];"
        "from tiny_models import tiny_model; from pipeline.composition.base_models import fingerprint;"
        "print(fingerprint(tiny_model('qwen2', width=64, layers=4, heads=4, seed=0)))"
    ).format(root=str(ROOT), tests=str(ROOT / "tests" / "support"))
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    assert other.stdout.strip().splitlines()[-1] == fingerprint(anchor_model("qwen2"))


def save_composition(tmp_path):
    calm = randomize_composition(CALMForCausalLM.from_models(anchor_model(), augmenting_model(), connections=[(1, 1)]))
    calm.save_pretrained(tmp_path / "calm")
    return tmp_path / "calm"


def test_an_anchor_with_the_same_embeddings_and_one_changed_layer_is_refused(tmp_path):
    directory = save_composition(tmp_path)
    anchor = anchor_model()
    with torch.no_grad():
        decoder_layers(anchor)[2].mlp.down_proj.weight.mul_(1.001)
    assert legacy_fingerprint(anchor) == legacy_fingerprint(anchor_model())  # the embeddings did not change
    message = one_line_error(CompositionLoadError, CALMForCausalLM.from_pretrained, directory, anchor=anchor,
                             augmenting=augmenting_model())
    assert message.startswith("anchor does not match the one this composition was trained with") and "fingerprint" in message
    # the untouched bases load
    CALMForCausalLM.from_pretrained(directory, anchor=anchor_model(), augmenting=augmenting_model())


def test_a_composition_saved_with_the_older_fingerprint_scheme(tmp_path):
    """Compositions saved before the full-weight fingerprint carry a digest of the input embeddings: they load onto
    matching bases with a warning and are upgraded by saving them again; other embeddings are refused."""
    directory = save_composition(tmp_path)
    config = json.loads((directory / "config.json").read_text())
    config["anchor"]["fingerprint"] = legacy_fingerprint(anchor_model())
    for record in config["augmenting"]:
        record["fingerprint"] = legacy_fingerprint(augmenting_model())
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.warns(UserWarning, match="saved with an older fingerprint scheme.*save it again"):
        loaded = CALMForCausalLM.from_pretrained(directory, anchor=anchor_model(), augmenting=augmenting_model())
    loaded.save_pretrained(tmp_path / "again")
    upgraded = json.loads((tmp_path / "again" / "config.json").read_text())
    assert upgraded["anchor"]["fingerprint"] == fingerprint(anchor_model())
    message = one_line_error(CompositionLoadError, CALMForCausalLM.from_pretrained, directory,
                             anchor=anchor_model(), augmenting=augmenting_model(seed=5))
    assert "augmenting model 0 does not match" in message and "older fingerprint scheme" in message


# ----- loading something else -----------------------------------------------------------------------------------
def test_from_pretrained_on_a_base_model_directory_says_what_it_is(tmp_path):
    anchor_model().save_pretrained(tmp_path / "llama")
    message = one_line_error(CompositionLoadError, CALMForCausalLM.from_pretrained, tmp_path / "llama")
    assert message == (f"{tmp_path / 'llama'} holds a llama model, not a saved CALM composition; compose it with "
                       "CALMForCausalLM.from_models (load it with load_causal_lm)")
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text("[1, 2]")
    assert "not a JSON object" in one_line_error(CompositionLoadError, CALMForCausalLM.from_pretrained, tmp_path / "odd")
    (tmp_path / "odd" / "config.json").write_text("{}")
    assert "without a model_type" in one_line_error(CompositionLoadError, CALMForCausalLM.from_pretrained,
                                                    tmp_path / "odd")


# ----- inputs ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def encoder_calm():
    return randomize_composition(
        CALMForCausalLM.from_models(anchor_model(), augmenting_model(), connections=[(1, 1), (5, 3)], mode="encoder")
    ).eval()


@pytest.mark.parametrize("mode", ["iterative", "encoder"])
def test_empty_input_ids_fail_in_one_line(mode, encoder_calm):
    calm = encoder_calm if mode == "encoder" else CALMForCausalLM.from_models(anchor_model(), augmenting_model())
    extra = {"augmenting_input_ids": random_ids(2, 3)} if mode == "encoder" else {}
    for ids in (torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 4, dtype=torch.long), torch.tensor([5, 6])):
        message = one_line_error(CompositionInputError, calm, input_ids=ids, **extra)
        assert message.startswith("input_ids must be a non-empty [batch, tokens] tensor")
    assert "empty" in one_line_error(CompositionInputError, calm.generate, torch.zeros(1, 0, dtype=torch.long),
                                     max_new_tokens=2)


def test_encoder_inputs_that_cannot_be_used_fail_in_one_line(encoder_calm):
    ids = random_ids(2, 6)
    message = one_line_error(CompositionInputError, encoder_calm, input_ids=ids,
                             augmenting_input_ids=torch.zeros(2, 0, dtype=torch.long))
    assert message.startswith("augmenting_input_ids (the prompt mA reads) must be a non-empty")
    message = one_line_error(CompositionInputError, encoder_calm, input_ids=ids, augmenting_input_ids=random_ids(3, 4))
    assert message == "augmenting_input_ids has 3 rows and input_ids 2: give one mA prompt per row of input_ids"
    message = one_line_error(CompositionInputError, encoder_calm, input_ids=ids, augmenting_input_ids=random_ids(2, 4),
                             augmenting_attention_mask=torch.ones(2, 5, dtype=torch.long))
    assert message.startswith("augmenting_attention_mask has shape (2, 5)")
    message = one_line_error(CompositionInputError, encoder_calm, input_ids=ids, attention_mask=torch.ones(2, 4))
    assert message.startswith("attention_mask has shape (2, 4)")
    for labels in (None, ids):
        message = one_line_error(CompositionInputError, encoder_calm, input_ids=ids, labels=labels)
        assert message.startswith("mode='encoder' needs augmenting_input_ids")


def test_encoder_mode_cannot_read_ahead(encoder_calm):
    """With the prompt given, mB position t depends on tokens <= t and the prompt only, whatever follows."""
    generator = torch.Generator().manual_seed(1)
    prompt_length, length = 4, 14
    ids = random_ids(2, length, seed=2)
    prompt = ids[:, :prompt_length]
    with torch.no_grad():
        base = encoder_calm(input_ids=ids, augmenting_input_ids=prompt).logits
        for t in range(prompt_length - 1, length - 1):
            changed = ids.clone()
            changed[:, t + 1 :] = torch.randint(3, VOCAB, (2, length - t - 1), generator=generator)
            logits = encoder_calm(input_ids=changed, augmenting_input_ids=prompt).logits
            assert torch.equal(logits[:, : t + 1], base[:, : t + 1]), f"logits at <= {t} read tokens after {t}"
        # mA's reading of the prompt matters: another prompt for mA changes mB's logits
        other = encoder_calm(input_ids=ids, augmenting_input_ids=random_ids(2, prompt_length, seed=9)).logits
    assert (other - base).abs().max() > 1e-3


def test_encoder_training_and_generation_still_work(encoder_calm):
    from pipeline.training.data import Collator

    rows = [{"input_ids": random_ids(1, n, seed=n)[0].tolist(), "n_prompt": p} for n, p in ((7, 3), (10, 5), (5, 2))]
    for row in rows:
        row["labels"] = [-100] * row["n_prompt"] + row["input_ids"][row["n_prompt"]:]
    batch = Collator(0, augmenting_prompt=True)(rows)
    calm = randomize_composition(
        CALMForCausalLM.from_models(anchor_model(), augmenting_model(), connections=[(1, 1)], mode="encoder")
    ).train()
    loss = calm(**batch).loss
    loss.backward()
    assert torch.isfinite(loss) and all(p.grad is not None for p in calm.bridges.parameters())
    with torch.no_grad():
        out = encoder_calm.eval().generate(random_ids(2, 5), max_new_tokens=4, min_new_tokens=4, do_sample=False,
                                           pad_token_id=0)
    assert out.shape == (2, 9)
