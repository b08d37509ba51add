"""What a composition trains on: D_C rows, their loss mask (loss_until) and anchor replay rows."""
import pytest

from pipeline.errors import PipelineError
from pipeline.params import compose_params
from pipeline.tokenizer import build_tokenizer
from pipeline.training.data import anchor_replay_rows, supervised_dataset
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


def kv_rows(path):
    import json

    return [json.loads(l) for l in open(path)]
