"""Invariants of the key-value arithmetic world's data (paper §4.1)."""
import json
import re

import pytest

from pipeline.errors import PipelineError
from pipeline.params import compose_params
from pipeline.worlds import kv_arithmetic as kv


@pytest.fixture(scope="module")
def cfg():
    c = compose_params(["preset=micro"])["worlds"]["kv_arithmetic"]["data"]
    c = dict(c, n_keys=60, operators=["+", "-", "x"], n_terms=[2, 4], key_length=[2, 6])
    c["sizes"] = dict(c["sizes"], test=50, test_held_in=20, kv_subs_train=300, num_math_train=300, composition_train=200, general_train=300)
    return c


def _read(d, name):
    return [json.loads(l) for l in (d / name).read_text().splitlines()]


@pytest.fixture(scope="module", params=[("plain", "direct"), ("padded", "scratchpad")])
def built(request, cfg, tmp_path_factory):
    d = tmp_path_factory.mktemp("kv")
    cfg["number_format"], cfg["kv_math_format"] = request.param
    kv.build(cfg, d, seed=3)
    return d


def test_values_unique_and_in_range(built, cfg):
    rows = _read(built, "d_kv.jsonl")
    values = [r["value"] for r in rows]
    keys = [r["key"] for r in rows]
    assert len(rows) == cfg["n_keys"]
    assert sorted(values) == list(range(1, cfg["n_keys"] + 1))
    assert len(set(keys)) == len(keys)
    lo, hi = cfg["key_length"]
    assert all(lo <= len(k) <= hi and set(k) <= set(cfg["alphabet"]) for k in keys)
    assert sum(r["held_in"] for r in rows) == round(cfg["n_keys"] * cfg["held_in_fraction"])


def test_held_out_keys_never_in_composition_data(built):
    held_in = {r["key"] for r in _read(built, "d_kv.jsonl") if r["held_in"]}
    comp = _read(built, "composition_train.jsonl")
    assert comp and all(set(r["keys"]) <= held_in for r in comp)
    test_out = _read(built, "kv_math_test.jsonl")
    assert all(not (set(r["keys"]) & held_in) for r in test_out)
    comp_prompts = {r["prompt"] for r in comp}
    assert not comp_prompts & {r["prompt"] for r in test_out}
    assert not comp_prompts & {r["prompt"] for r in _read(built, "kv_math_held_in_test.jsonl")}
    assert all(set(r["keys"]) <= held_in for r in _read(built, "kv_math_held_in_test.jsonl"))


def test_every_answer_is_pythons_evaluation(built, cfg):
    table = {r["key"]: r["value"] for r in _read(built, "d_kv.jsonl")}
    fmt = cfg["answer_format"]
    for name in ("kv_math_test.jsonl", "kv_math_held_in_test.jsonl", "composition_train.jsonl", "kv_subs_test.jsonl", "kv_subs_train.jsonl"):
        for r in _read(built, name):
            expr = r["prompt"][:-1]
            numeric = expr
            for k in sorted(r["keys"], key=len, reverse=True):
                pass
            # substitute key by key, in order, from the expression's own tokens
            parts, ops, cur = [], [], ""
            for ch in expr:
                if ch in "+-x" and cur and cur not in table and not cur.isdigit():
                    raise AssertionError(f"unknown key {cur!r} in {expr!r}")
                if ch in "+-x" and cur:
                    parts.append(cur); ops.append(ch); cur = ""
                else:
                    cur += ch
            parts.append(cur)
            assert parts == r["keys"], (parts, r)
            numeric = kv.number_text(table[parts[0]], cfg) + "".join(o + kv.number_text(table[p], cfg) for o, p in zip(ops, parts[1:]))
            value = eval(str(table[parts[0]]) + "".join(o + str(table[p]) for o, p in zip(ops, parts[1:])).replace("x", "*"))
            if "kv_subs" in name:
                assert r["target"] == numeric
            elif cfg["kv_math_format"] == "scratchpad":
                assert r["target"] == numeric + "=" + kv.answer_text(value, fmt)
            else:
                assert kv.parse_answer(r["target"], fmt) == value
    for r in _read(built, "num_math_test.jsonl") + _read(built, "num_math_train.jsonl"):
        assert kv.parse_answer(r["target"], fmt) == kv.evaluate_expression(r["prompt"][:-1])
        assert kv.evaluate_expression(r["prompt"][:-1]) == eval("".join(t if t in "+-x" else str(int(t)) for t in re.split(r"([+\-x])", r["prompt"][:-1])).replace("x", "*"))


def test_general_text_holds_no_key_value_pair(built):
    table = {r["key"]: str(r["value"]) for r in _read(built, "d_kv.jsonl")}
    for r in _read(built, "general_train.jsonl"):
        t = r["target"]
        assert not any(k in t for k in table if len(k) >= 3 and any(ch.isdigit() for ch in t))


def test_same_seed_same_bytes(cfg, tmp_path):
    kv.build(cfg, tmp_path / "a", seed=5)
    kv.build(cfg, tmp_path / "b", seed=5)
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    kv.build(cfg, tmp_path / "c", seed=6)
    assert (tmp_path / "a" / "d_kv.jsonl").read_bytes() != (tmp_path / "c" / "d_kv.jsonl").read_bytes()


@pytest.mark.parametrize("value,fmt,text", [(123, "reversed", "321"), (-40, "reversed", "-04"), (7, "plain", "7"), (-12, "plain", "-12")])
def test_answer_format_round_trip(value, fmt, text):
    assert kv.answer_text(value, fmt) == text
    assert kv.parse_answer(text, fmt) == value


def test_impossible_sizes_fail_with_one_line(cfg, tmp_path):
    bad = dict(cfg, n_keys=26 * 26 + 26 ** 3 + 1, key_length=[2, 3], alphabet="abcdefghijklmnopqrstuvwyzq"[:26])
    bad["alphabet"] = "abcdefghijklmnopqrstuvwyz"  # 25 letters
    bad["n_keys"] = 25 ** 2 + 25 ** 3 + 1
    with pytest.raises(PipelineError, match="more than the .* distinct strings") as e:
        kv.build(bad, tmp_path, seed=0)
    assert "\n" not in str(e.value)
    with pytest.raises(PipelineError, match="held-in"):
        kv.build(dict(cfg, held_in_fraction=0.0), tmp_path, seed=0)


def test_dense_key_space_is_exhausted_exactly(cfg, tmp_path):
    small = dict(cfg, alphabet="ab", key_length=[2, 2], n_keys=4, held_in_fraction=0.5, n_terms=[2, 2], operators=["+"])
    small["sizes"] = dict(cfg["sizes"], test=4, test_held_in=2, kv_subs_train=10, num_math_train=10, composition_train=2, general_train=5)
    kv.build(small, tmp_path, seed=0)
    assert sorted(r["key"] for r in _read(tmp_path, "d_kv.jsonl")) == ["aa", "ab", "ba", "bb"]


def test_digit_cover_held_in_keys_change_only_the_split(cfg, tmp_path):
    """held_in_selection=digit_cover: the held-in values show every digit in every place the values have,
    and every dataset that does not depend on the split is the same bytes as with a random split."""
    n_held_in = round(cfg["n_keys"] * cfg["held_in_fraction"])
    kv.build(dict(cfg, held_in_selection="random"), tmp_path / "random", seed=4)
    kv.build(dict(cfg, held_in_selection="digit_cover"), tmp_path / "cover", seed=4)
    rows = _read(tmp_path / "cover", "d_kv.jsonl")

    def pairs(values):
        return {(place, d) for v in values for place, d in enumerate(reversed(str(v)))}

    held = [r["value"] for r in rows if r["held_in"]]
    assert len(held) == n_held_in
    assert pairs(held) == pairs(r["value"] for r in rows)
    random_held = [r["value"] for r in _read(tmp_path / "random", "d_kv.jsonl") if r["held_in"]]
    assert pairs(random_held) != pairs(held)  # this seed's random split misses some pair: the option matters
    for name in ("general_train.jsonl", "kv_subs_train.jsonl", "kv_subs_test.jsonl", "num_math_train.jsonl", "num_math_test.jsonl"):
        assert (tmp_path / "random" / name).read_bytes() == (tmp_path / "cover" / name).read_bytes(), name
    with pytest.raises(PipelineError, match="held_in_selection"):
        kv.build(dict(cfg, held_in_selection="best"), tmp_path / "bad", seed=4)


def test_random_prefixes_carry_no_key(cfg, tmp_path):
    """mB's value-free prefixes are shaped like KV-MATH prompts but never use a key of D_KV."""
    dense = dict(cfg, key_length=[2, 2], n_keys=300)  # 300 of the 625 two-letter strings are keys
    kv.build(dense, tmp_path, seed=1)
    keys = {r["key"] for r in _read(tmp_path, "d_kv.jsonl")}
    prefixes = kv.random_prefixes(dense, 500, seed=2, data_dir=tmp_path)
    words = [w for p in prefixes for w in re.split(r"[+\-x=]", p) if w]
    assert len(words) >= 1000 and not set(words) & keys
    unfiltered = [w for p in kv.random_prefixes(dense, 500, seed=2) for w in re.split(r"[+\-x=]", p) if w]
    assert set(unfiltered) & keys  # without data_dir they would collide


def test_prefix_pool_sets_how_many_strings_the_prefixes_are_drawn_from(cfg):
    """`prefix_pool` (issue 29, Table 1's anchor): mB trained on prefixes from ~100 strings could learn those strings
    rather than to ignore any string before its numbers. Unset, the pool is today's (as many as D_KV's keys, at
    least 50), so the published models keep their bytes; set, the prefixes use that many distinct strings."""
    def strings(prefixes):
        return {w for p in prefixes for w in re.split(r"[+\-x=]", p) if w}

    default = kv.random_prefixes(cfg, 5000, seed=3)
    assert default == kv.random_prefixes(cfg, 5000, seed=3, pool=max(cfg["n_keys"], 50))
    assert len(strings(default)) <= max(cfg["n_keys"], 50)
    assert len(strings(kv.random_prefixes(cfg, 5000, seed=3, pool=2000))) > 1500
    with pytest.raises(PipelineError, match="prefix_pool"):
        kv.random_prefixes(cfg, 10, seed=3, pool=0)
