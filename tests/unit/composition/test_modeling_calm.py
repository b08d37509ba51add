"""The composition core: identity at init, causality, caching, padding, training, saving, for every family."""

import pytest
import torch
from tests.support.tiny_models import FAMILIES, VOCAB, beams_that_split, randomize_composition, tiny_model

from pipeline.composition import (
    CALMForCausalLM,
    CompositionConfigError,
    CompositionLoadError,
    default_connections,
)

# Each family is the anchor once and an augmenting model once, always with other widths, depths and head counts.
PAIRS = [(anchor, FAMILIES[(i + 1) % len(FAMILIES)]) for i, anchor in enumerate(FAMILIES)]
MODES = ("iterative", "encoder")


def compose(anchor_family="llama", augmenting_family="gpt2", mode="iterative", randomize=True, connections=None,
            rotary=True, final_norm=False, attention_dropout=0.0, augmenting_dropout=0.0, recency_bias=False):
    anchor = tiny_model(anchor_family, width=64, layers=4, heads=4, seed=0)
    augmenting = tiny_model(augmenting_family, width=32, layers=6, heads=2, seed=1)
    calm = CALMForCausalLM.from_models(
        anchor, augmenting, connections=connections or [(1, 1), (3, 2), (5, 3)], mode=mode, rotary=rotary,
        final_norm=final_norm, attention_dropout=attention_dropout, augmenting_dropout=augmenting_dropout,
        recency_bias=recency_bias,
    )
    return randomize_composition(calm) if randomize else calm


def left_padded(sequences, pad=0):
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, width - len(sequence) :] = torch.tensor(sequence)
        mask[row, width - len(sequence) :] = 1
    return ids, mask


def random_sequences(lengths, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(3, VOCAB, (n,), generator=generator).tolist() for n in lengths]


@pytest.mark.parametrize("anchor_family,augmenting_family", PAIRS)
def test_identity_at_init_for_every_family(anchor_family, augmenting_family):
    anchor = tiny_model(anchor_family, width=64, layers=4, heads=4, seed=0)
    reference_model = tiny_model(anchor_family, width=64, layers=4, heads=4, seed=0)
    augmenting = tiny_model(augmenting_family, width=32, layers=6, heads=2, seed=1)
    ids, mask = left_padded(random_sequences([9, 14, 5]))
    # Positions count real tokens only (left padding must not shift them); the composition does the same.
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        reference = reference_model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        calm = CALMForCausalLM.from_models(anchor, augmenting)  # the paper's default connections
        composed = calm(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(composed[real], reference[real], atol=1e-6, rtol=0)


def test_default_connections_follow_the_paper():
    assert default_connections(24, 32) == [(3, 4), (7, 10), (11, 15), (15, 20), (19, 26), (23, 31)]
    assert default_connections(12, 12) == [(3, 3), (7, 7), (11, 11)]
    assert default_connections(2, 4) == [(1, 3)]  # fewer than 4 mA layers: one connection, deepest to deepest


@pytest.mark.parametrize("anchor_family,augmenting_family,recency_bias", [(*p, False) for p in PAIRS[:2]] +
                         [(*PAIRS[0], True)])
def test_no_leakage_from_future_tokens(anchor_family, augmenting_family, recency_bias):
    calm = compose(anchor_family, augmenting_family, mode="iterative", recency_bias=recency_bias)
    ids = torch.tensor(random_sequences([16], seed=3))
    t = 7
    changed = ids.clone()
    changed[:, t + 1 :] = torch.tensor(random_sequences([16 - t - 1], seed=4))
    changed_past = ids.clone()
    changed_past[:, t - 2] = (ids[:, t - 2] + 1 - 3) % (VOCAB - 3) + 3
    with torch.no_grad():
        base = calm(input_ids=ids).logits
        future = calm(input_ids=changed).logits
        # The same change of a past token, seen by mA only: proves the cross-attention carries information.
        anchor_only = calm.anchor(input_ids=changed_past).logits
        past = calm(input_ids=changed_past).logits
    assert torch.equal(base[:, : t + 1], future[:, : t + 1]), "logits at <= t changed with tokens after t"
    assert not torch.equal(base[:, t + 1 :], future[:, t + 1 :])
    # mA's contribution is real: the composition differs from the bare anchor on the same tokens.
    assert (past[:, t:] - anchor_only[:, t:]).abs().max() > 1e-3


@pytest.mark.parametrize("mode,rotary,recency_bias", [("iterative", True, False), ("encoder", True, False),
                                                      ("iterative", False, False), ("iterative", True, True)])
def test_cached_decoding_equals_full_recomputation(mode, rotary, recency_bias):
    calm = compose("qwen2", "llama", mode=mode, rotary=rotary, recency_bias=recency_bias)
    ids, mask = left_padded(random_sequences([6, 11]))
    settings = dict(attention_mask=mask, max_new_tokens=32, min_new_tokens=32, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        cached = calm.generate(ids, use_cache=True, **settings)
        uncached = calm.generate(ids, use_cache=False, **settings)
    assert cached.shape == (2, ids.shape[1] + 32)
    assert torch.equal(cached, uncached)
    # The generated continuation really depends on the composition (not only the anchor).
    with torch.no_grad():
        anchor_alone = calm.anchor.generate(ids, use_cache=True, **settings)
    assert not torch.equal(cached, anchor_alone)


@pytest.mark.parametrize("mode", MODES)
def test_beam_search_with_a_cache_equals_beam_search_recomputing_and_untrained_equals_the_anchor(mode, monkeypatch):
    """Beam search reorders the cache every step (CALMCache.reorder_cache: the anchor's and mA's caches, the
    keys/values, the masks), a row often chosen for two beams; recomputing everything each step needs no reorder."""
    calm = compose("llama", "qwen2", mode=mode, randomize=False)
    ids, mask = left_padded(random_sequences([6, 11], seed=7))
    settings = dict(attention_mask=mask, max_new_tokens=12, min_new_tokens=12, num_beams=3, num_return_sequences=3,
                    do_sample=False, pad_token_id=0)
    with torch.no_grad():
        assert torch.equal(calm.generate(ids, **settings), calm.anchor.generate(ids, **settings))  # W_O = 0
        randomize_composition(calm)
        beams = beams_that_split(monkeypatch)
        cached = calm.generate(ids, use_cache=True, **settings)
        uncached = calm.generate(ids, use_cache=False, **settings)
        greedy = calm.generate(ids, attention_mask=mask, max_new_tokens=12, min_new_tokens=12, do_sample=False,
                               pad_token_id=0)
    assert cached.shape == (6, ids.shape[1] + 12) and torch.equal(cached, uncached)
    assert any(len(set(order)) < len(order) for order in beams), "no step chose one beam twice: reorder untested"
    assert not torch.equal(cached[::3], greedy)  # the search found other continuations than greedy decoding


@pytest.mark.parametrize("mode,anchor_family,augmenting_family", [(m, "gpt_neox", "gemma") for m in MODES] + [("iterative", "xglm", "gpt2")])
def test_batched_left_padded_generation_equals_one_by_one(mode, anchor_family, augmenting_family):
    calm = compose(anchor_family, augmenting_family, mode=mode)
    sequences = random_sequences([3, 12, 7], seed=5)
    ids, mask = left_padded(sequences)
    settings = dict(max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        batched = calm.generate(ids, attention_mask=mask, **settings)[:, ids.shape[1] :]
        for row, sequence in enumerate(sequences):
            alone = calm.generate(torch.tensor([sequence]), **settings)[:, len(sequence) :]
            assert torch.equal(batched[row], alone[0]), f"row {row} differs when batched with padding"


def test_sampling_and_several_return_sequences_work():
    calm = compose("llama", "qwen2")
    ids, mask = left_padded(random_sequences([4, 9]))
    torch.manual_seed(0)
    out = calm.generate(ids, attention_mask=mask, do_sample=True, top_k=0, max_new_tokens=10, min_new_tokens=10,
                        num_return_sequences=3, pad_token_id=0)
    assert out.shape == (6, ids.shape[1] + 10)
    assert len({tuple(row.tolist()) for row in out}) > 1  # samples differ


@pytest.mark.parametrize("mode,recency_bias", [(m, False) for m in MODES] + [("iterative", True)])
def test_right_padded_training_batch_equals_unpadded_rows(mode, recency_bias):
    calm = compose("llama", "gpt2", mode=mode, recency_bias=recency_bias)
    sequences = random_sequences([5, 13, 9], seed=6)
    width = max(map(len, sequences))
    ids = torch.zeros((3, width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence)
        mask[row, : len(sequence)] = 1
    prompt = 3  # encoder mode: mA reads the first 3 tokens of each row
    extra = {}
    if mode == "encoder":
        extra = dict(augmenting_input_ids=ids[:, :prompt], augmenting_attention_mask=mask[:, :prompt])
    with torch.no_grad():
        batched = calm(input_ids=ids, attention_mask=mask, **extra).logits
        for row, sequence in enumerate(sequences):
            one = torch.tensor([sequence])
            extra_one = {"augmenting_input_ids": one[:, :prompt]} if mode == "encoder" else {}
            alone = calm(input_ids=one, **extra_one).logits[0]
            torch.testing.assert_close(batched[row, : len(sequence)], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_rows_with_nothing_to_attend_give_no_nan(mode):
    calm = compose("llama", "gpt2", mode=mode)
    ids, mask = left_padded(random_sequences([2, 10]))
    extra = {}
    if mode == "encoder":  # the first row's prompt for mA is entirely padding
        extra = dict(augmenting_input_ids=ids, augmenting_attention_mask=torch.zeros_like(mask).index_fill(0, torch.tensor([1]), 1))
    labels = ids.masked_fill(mask == 0, -100)
    out = calm(input_ids=ids, attention_mask=mask, labels=labels, **extra)
    out.loss.backward()
    assert torch.isfinite(out.logits).all() and torch.isfinite(out.loss)
    assert all(torch.isfinite(p.grad).all() for p in calm.bridges.parameters())


def test_training_changes_only_the_composition_and_lowers_the_loss():
    calm = compose("llama", "gpt2", randomize=False)
    base_before = {k: v.clone() for k, v in calm.state_dict().items() if not k.startswith("bridges.")}
    bridges_before = {k: v.clone() for k, v in calm.bridges.state_dict().items()}
    assert all(not p.requires_grad for p in calm.anchor.parameters())
    assert all(not p.requires_grad for p in calm.augmenting.parameters())
    # Toy task that only mA can solve: mA reads the sequence, the target is the token 2 positions back, which the
    # anchor (random, frozen) cannot produce on its own.
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 20, (16, 12), generator=generator)
    labels = torch.full_like(ids, -100)
    labels[:, 3:] = ids[:, 1:-2]  # HF shifts labels: position t predicts labels[t+1] = ids[t-1]
    optimizer = torch.optim.AdamW([p for p in calm.parameters() if p.requires_grad], lr=3e-3)
    calm.train()
    assert not calm.anchor.training and not calm.augmenting.training
    losses = []
    for _ in range(20):
        loss = calm(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.1, losses
    for k, v in calm.state_dict().items():
        if not k.startswith("bridges."):
            assert torch.equal(v, base_before[k]), f"base weight {k} changed"
    changed = [k for k, v in calm.bridges.state_dict().items() if not torch.equal(v, bridges_before[k])]
    assert len(changed) == len(bridges_before)  # f_proj, W_Q, W_K, W_V, W_O of every connection


def test_the_recency_bias_counts_distance_in_readable_states_only():
    """With queries at zero, attention is the bias alone: head h weighs the readable keys as softmax(-slope_h x the
    number of readable keys after each), whatever unreadable slots (padding, another row's tokens) lie between."""
    from pipeline.composition.configuration_calm import CALMConfig
    from pipeline.composition.cross_attention import CrossAttention

    config = CALMConfig(anchor={"hidden_size": 16}, num_heads=4, recency_bias=True, rotary=False)
    bridge = CrossAttention(config, augmenting_width=8, anchor_width=16)
    torch.nn.init.zeros_(bridge.q_proj.weight)
    torch.nn.init.eye_(bridge.o_proj.weight)
    allowed = torch.tensor([[True, False, True, True, False, True, False]])[None, None]  # [1, 1, 1, 7]
    values_in = torch.randn(1, 7, 8)
    keys, values = bridge.keys_values(values_in, torch.arange(7)[None])
    update = bridge(torch.randn(1, 1, 16), torch.zeros(1, 1, dtype=torch.long), keys, values, allowed,
                    torch.ones(1, 1, 1, 1, dtype=torch.bool))
    readable = [0, 2, 3, 5]
    distance = torch.tensor([3.0, 2.0, 1.0, 0.0])
    expected = []
    for h in range(4):
        weights = torch.softmax(-(2.0 ** (-8.0 * (h + 1) / 4)) * distance, 0)
        expected.append(weights @ values[0, h, readable])
    torch.testing.assert_close(update[0, 0], torch.cat(expected))


def test_parameter_count_matches_appendix_c():
    calm = compose("llama", "gpt2", connections=[(0, 0), (5, 3)])
    d_a, d_b, n = 32, 64, 2
    report = calm.parameter_count_report()
    assert report["paper_formula"] == n * (d_a * d_b + 3 * d_b**2)
    assert report["actual"] == report["paper_formula_plus_w_o"] == n * (d_a * d_b + 4 * d_b**2)
    assert report["actual"] == sum(p.numel() for p in calm.parameters() if p.requires_grad)


def test_augmenting_model_runs_only_to_its_deepest_connection():
    calm = compose("llama", "gpt2", connections=[(0, 1), (2, 3)])
    assert len(calm._augmenting_layers[0]) == 3  # of 6
    assert not hasattr(calm.augmenting[0], "lm_head")


@pytest.mark.parametrize("family", FAMILIES)
def test_final_norm_connections_read_the_final_hidden_state(family):
    """With final_norm, a connection from mA's last layer reads exactly what transformers returns as mA's last
    hidden state (after the final norm); the other connections still read raw layer outputs."""
    augmenting = tiny_model(family, width=32, layers=3, heads=2, seed=1)
    reference = tiny_model(family, width=32, layers=3, heads=2, seed=1)
    anchor = tiny_model("llama", width=64, layers=2, heads=4, seed=0)
    calm = CALMForCausalLM.from_models(anchor, augmenting, connections=[(0, 0), (2, 1)], final_norm=True)
    ids = torch.tensor(random_sequences([7])[0])[None]
    with torch.no_grad():
        hidden = reference(input_ids=ids, output_hidden_states=True).hidden_states
        calm._captured = {}
        calm.augmenting[0](input_ids=ids)
        captured, calm._captured = calm._captured, None
    torch.testing.assert_close(captured[(0, 2)], hidden[-1], atol=1e-6, rtol=0)
    torch.testing.assert_close(captured[(0, 0)], hidden[1], atol=1e-6, rtol=0)
    assert not torch.allclose(captured[(0, 2)], _raw_last_layer_output(reference, ids), atol=1e-3)


@pytest.mark.parametrize("option", ["attention_dropout", "augmenting_dropout"])
def test_dropout_acts_only_while_training(option):
    calm = compose("llama", "gpt2", **{option: 0.5})
    bridges = [m for m in calm.modules() if m.__class__.__name__ == "CrossAttention"]
    ids = torch.tensor(random_sequences([12, 12])).view(2, 12)
    with torch.no_grad():
        inference = calm.eval()(input_ids=ids).logits
        calm.train()
        torch.manual_seed(0)
        dropped = calm(input_ids=ids).logits
        for bridge in bridges:
            setattr(bridge, option, 0.0)
        undropped = calm(input_ids=ids).logits  # train mode without dropout: the bases stay in eval mode
    torch.testing.assert_close(undropped, inference, atol=0, rtol=0)
    assert not torch.allclose(dropped, inference, atol=1e-4)


def _raw_last_layer_output(model, ids):
    from pipeline.composition.base_models import decoder_layers

    out = {}
    handle = decoder_layers(model)[-1].register_forward_hook(
        lambda module, args, output: out.setdefault("raw", output[0] if isinstance(output, tuple) else output)
    )
    with torch.no_grad():
        model(input_ids=ids)
    handle.remove()
    return out["raw"]


@pytest.mark.parametrize("final_norm", [False, True])
def test_save_and_load_round_trip(tmp_path, final_norm):
    dropouts = {"attention_dropout": 0.1, "augmenting_dropout": 0.3} if final_norm else {}  # options survive the trip
    calm = compose("llama", "gpt2", final_norm=final_norm, **dropouts).eval()
    calm.save_pretrained(tmp_path / "calm")
    saved = sorted(p.name for p in (tmp_path / "calm").iterdir())
    assert saved == ["config.json", "generation_config.json", "model.safetensors"]
    # Only composition parameters are written: the file is small next to the bases.
    assert (tmp_path / "calm" / "model.safetensors").stat().st_size < 4 * 4 * calm.num_composition_parameters()
    loaded = CALMForCausalLM.from_pretrained(
        tmp_path / "calm",
        anchor=tiny_model("llama", width=64, layers=4, heads=4, seed=0),
        augmenting=[tiny_model("gpt2", width=32, layers=6, heads=2, seed=1)],
    )
    ids, mask = left_padded(random_sequences([6, 10]))
    with torch.no_grad():
        assert torch.equal(calm(input_ids=ids, attention_mask=mask).logits, loaded(input_ids=ids, attention_mask=mask).logits)
    assert loaded.config.mode == calm.config.mode
    assert loaded.config.final_norm == final_norm
    for option in ("attention_dropout", "augmenting_dropout"):
        assert getattr(loaded.config, option) == getattr(calm.config, option)
    assert loaded.config.augmenting[0]["connections"] == calm.config.augmenting[0]["connections"]


def test_loading_onto_other_bases_fails_clearly(tmp_path):
    calm = compose("llama", "gpt2")
    calm.save_pretrained(tmp_path / "calm")
    anchor = tiny_model("llama", width=64, layers=4, heads=4, seed=0)
    same_shape_other_weights = tiny_model("gpt2", width=32, layers=6, heads=2, seed=7)
    with pytest.raises(CompositionLoadError, match="augmenting model 0 does not match.*fingerprint"):
        CALMForCausalLM.from_pretrained(tmp_path / "calm", anchor=anchor, augmenting=[same_shape_other_weights])
    wider = tiny_model("llama", width=128, layers=4, heads=4, seed=0)
    with pytest.raises(CompositionLoadError, match="anchor does not match.*hidden_size 64 != 128"):
        CALMForCausalLM.from_pretrained(tmp_path / "calm", anchor=wider, augmenting=[tiny_model("gpt2", 32, 6, 2, seed=1)])
    with pytest.raises(CompositionLoadError, match="does not name its anchor"):
        CALMForCausalLM.from_pretrained(tmp_path / "calm")  # bases were in-memory models: nothing to load by name
    with pytest.raises(CompositionLoadError, match="not a saved composition"):
        CALMForCausalLM.from_pretrained(tmp_path / "nowhere")


def test_loading_reads_bases_from_the_paths_in_the_config(tmp_path):
    from pipeline.composition import load_causal_lm

    tiny_model("llama", 64, 4, 4, seed=0).save_pretrained(tmp_path / "mB")
    tiny_model("gpt2", 32, 6, 2, seed=1).save_pretrained(tmp_path / "mA")
    calm = randomize_composition(
        CALMForCausalLM.from_models(load_causal_lm(str(tmp_path / "mB")), load_causal_lm(str(tmp_path / "mA")))
    )
    calm.save_pretrained(tmp_path / "calm")
    loaded = CALMForCausalLM.from_pretrained(tmp_path / "calm")
    ids = torch.tensor(random_sequences([9]))
    with torch.no_grad():
        assert torch.equal(calm(input_ids=ids).logits, loaded(input_ids=ids).logits)
    # A truncated or tampered weights file is refused with the names of what is wrong.
    from safetensors.torch import load_file, save_file

    state = load_file(tmp_path / "calm" / "model.safetensors")
    state.pop(next(iter(state)))
    save_file(state, tmp_path / "calm" / "model.safetensors")
    with pytest.raises(CompositionLoadError, match="missing"):
        CALMForCausalLM.from_pretrained(tmp_path / "calm")


@pytest.mark.parametrize(
    "connections,message",
    [
        ([(6, 0)], "mA layer 6 is out of range"),
        ([(0, 4)], "mB layer 4 is out of range"),
        ([(0, 1, 2)], "is not a pair"),
        ([], "non-empty"),
        ([[(0, 1)], [(1, 2)]], "2 connection lists given for 1 augmenting models"),
        ([(1, 1), (1, 1)], "repeat a pair"),
    ],
)
def test_bad_connection_lists_fail_clearly(connections, message):
    anchor = tiny_model("llama", 64, 4, 4)
    augmenting = tiny_model("gpt2", 32, 6, 2, seed=1)
    with pytest.raises(CompositionConfigError, match=message):
        CALMForCausalLM.from_models(anchor, augmenting, connections=connections)


def test_other_bad_setups_fail_clearly():
    anchor = tiny_model("llama", 64, 4, 4)
    with pytest.raises(CompositionConfigError, match="share one tokenizer"):
        CALMForCausalLM.from_models(anchor, tiny_model("gpt2", 32, 6, 2, vocab=50))
    with pytest.raises(CompositionConfigError, match="mode must be one of"):
        CALMForCausalLM.from_models(anchor, tiny_model("gpt2", 32, 6, 2), mode="sideways")
    with pytest.raises(CompositionConfigError, match="num_heads must be a positive integer dividing the anchor width 64"):
        CALMForCausalLM.from_models(anchor, tiny_model("gpt2", 32, 6, 2), num_heads=5)
    with pytest.raises(CompositionConfigError, match="attention_dropout must be in"):
        CALMForCausalLM.from_models(anchor, tiny_model("gpt2", 32, 6, 2), attention_dropout=1.0)
    with pytest.raises(CompositionConfigError, match="augmenting_dropout must be in"):
        CALMForCausalLM.from_models(anchor, tiny_model("gpt2", 32, 6, 2), augmenting_dropout=-0.1)
    calm = compose("llama", "gpt2", mode="encoder")
    ids = torch.tensor(random_sequences([8]))
    with pytest.raises(CompositionConfigError, match="needs augmenting_input_ids"):
        calm(input_ids=ids, labels=ids)


def test_two_augmenting_models_and_a_model_composed_with_itself():
    anchor = tiny_model("llama", 64, 4, 4)
    first, second = tiny_model("gpt2", 32, 6, 2, seed=1), tiny_model("qwen2", 48, 3, 4, seed=2)
    calm = randomize_composition(
        CALMForCausalLM.from_models(anchor, [first, second], connections=[[(5, 3)], [(0, 1), (2, 2)]])
    )
    ids, mask = left_padded(random_sequences([5, 9]))
    settings = dict(attention_mask=mask, max_new_tokens=12, min_new_tokens=12, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        assert torch.equal(calm.generate(ids, **settings), calm.generate(ids, use_cache=False, **settings))
    # Composing a model with itself must not cut the anchor's layers when mA is truncated.
    itself = CALMForCausalLM.from_models(anchor, anchor, connections=[(1, 2)])
    assert len(itself._augmenting_layers[0]) == 2
    assert len(itself.anchor.model.layers) == 4
