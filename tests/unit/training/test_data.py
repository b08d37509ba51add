"""What a composition trains on: D_C rows, their loss mask (loss_until) and anchor replay rows."""
import json
import math
from collections import Counter

import pytest

from pipeline.errors import PipelineError
from pipeline.params import compose_params
from pipeline.tokenization import build_tokenizer
from pipeline.training.data import anchor_replay_rows, composition_mix, supervised_dataset, training_rows
from pipeline.worlds import kv_arithmetic as kv


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(kv.vocabulary(compose_params(["preset=micro"])["worlds"]["kv_arithmetic"]["data"]))


def _labelled(tok, item):
    return tok.decode([t for t in item["labels"] if t != -100])


def test_loss_until_covers_the_target_up_to_the_marker_only(tok):
    rows = [
        {"prompt": "ab+cd=", "target": "12+34=64"},  # scratchpad KV-MATH: loss on "12+34=" only
        {"prompt": "12+34=", "target": "64"},  # no marker in the target: whole target and <eos>
    ]
    full = supervised_dataset(rows, tok, cache=None)
    cut = supervised_dataset(rows, tok, loss_until="=", cache=None)
    assert _labelled(tok, full[0]) == "12+34=64<eos>"
    assert _labelled(tok, cut[0]) == "12+34="
    assert _labelled(tok, cut[1]) == _labelled(tok, full[1]) == "64<eos>"
    assert cut[0]["input_ids"] == full[0]["input_ids"]  # the model still reads the whole row
    # labels stay aligned with input_ids (the model shifts them): the kept labels are the target's own tokens
    n_prompt = full[0]["n_prompt"]
    assert cut[0]["labels"][n_prompt : n_prompt + 6] == full[0]["input_ids"][n_prompt : n_prompt + 6]


def test_anchor_replay_rows_come_from_the_anchor_data_seeded_and_keyless(tmp_path, monkeypatch):
    params = compose_params(["preset=micro", "worlds.kv_arithmetic.models.calm.anchor_replay=0.25"])
    monkeypatch.chdir(tmp_path)
    kv.build(params["worlds"]["kv_arithmetic"]["data"], tmp_path / "data" / "kv_arithmetic", seed=params["seed"])
    keys = {r["key"] for r in kv_rows(tmp_path / "data" / "kv_arithmetic" / "d_kv.jsonl")}
    anchor_prompts = {r["prompt"] for r in kv_rows(tmp_path / "data" / "kv_arithmetic" / "num_math_train.jsonl")}
    comp = params["worlds"]["kv_arithmetic"]["models"]["calm"]
    rows = anchor_replay_rows(params, "kv_arithmetic", comp, n_composition_rows=300)
    assert len(rows) == 100  # 25% of the mix
    assert rows == anchor_replay_rows(params, "kv_arithmetic", comp, n_composition_rows=300)
    prefixed = [r for r in rows if r["prompt"] not in anchor_prompts]
    assert prefixed and len(prefixed) < len(rows)  # mB's prefix_fraction applies to its replayed rows too
    for r in rows:
        words = [w for w in r["prompt"].replace("+", " ").replace("=", " ").split() if not w.isdigit()]
        assert not set(words) & keys
    assert anchor_replay_rows(params, "kv_arithmetic", dict(comp, anchor_replay=0.0), 300) == []
    with pytest.raises(PipelineError, match="anchor_replay"):
        anchor_replay_rows(params, "kv_arithmetic", dict(comp, anchor_replay=1.0), 300)


def test_fresh_anchor_replay_keeps_the_fraction_of_the_run_and_draws_distinct_rows(tmp_path, monkeypatch, tok):
    params = compose_params(["preset=micro"])
    monkeypatch.chdir(tmp_path)
    kv.build(params["worlds"]["kv_arithmetic"]["data"], tmp_path / "data" / "kv_arithmetic", seed=params["seed"])
    comp = dict(params["worlds"]["kv_arithmetic"]["models"]["calm"], train={"steps": 40, "batch_size": 16})
    d_c = kv_rows(tmp_path / "data" / "kv_arithmetic" / "composition_train.jsonl")[:30]
    fixed = dict(comp, anchor_replay=0.25)
    fresh = dict(comp, anchor_replay={"fraction": 0.25, "fresh": True})

    fixed_mix, n_fixed, fixed_repeats = composition_mix(params, "kv_arithmetic", fixed, d_c, tok)
    fresh_mix, n_fresh, fresh_repeats = composition_mix(params, "kv_arithmetic", fresh, d_c, tok)
    n = len(d_c)
    assert n >= 10 and (len(fixed_mix), n_fixed) == (n + round(n / 3), round(n / 3))  # D_C once, a quarter replayed
    # fresh: D_C repeated as often as the run's 40 * 16 draws reach it (0.75 * 640 / n times), a quarter replayed
    repeats = math.ceil(0.75 * 640 / n)
    assert (fixed_repeats, fresh_repeats) == (1, repeats)
    assert n_fresh == round(repeats * n / 3) and len(fresh_mix) == repeats * n + n_fresh
    assert abs(n_fresh / len(fresh_mix) - 0.25) < 0.01
    rows = anchor_replay_rows(params, "kv_arithmetic", fresh, len(d_c))
    assert rows == anchor_replay_rows(params, "kv_arithmetic", fresh, len(d_c))  # seeded
    # without replacement while the anchor's data lasts: no row more often than the anchor's data holds it
    pool = Counter(json.dumps(r, sort_keys=True) for r in training_rows(params, "kv_arithmetic", "mB"))
    drawn = Counter(json.dumps(r, sort_keys=True) for r in rows)
    assert len(rows) <= sum(pool.values()) and drawn <= pool
    assert len(drawn) > 2 * n_fixed  # many more distinct rows than the fixed set
    with pytest.raises(PipelineError, match="anchor_replay must be a fraction or"):
        anchor_replay_rows(params, "kv_arithmetic", dict(comp, anchor_replay={"fresh": True}), n)
    with pytest.raises(PipelineError, match="anchor_replay must be in"):
        anchor_replay_rows(params, "kv_arithmetic", dict(comp, anchor_replay={"fraction": 1.5, "fresh": True}), n)


def kv_rows(path):
    return [json.loads(l) for l in open(path)]
