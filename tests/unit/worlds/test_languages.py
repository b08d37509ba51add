"""Invariants of the low-resource-languages world's data (paper §4.2): synthetic languages and splits."""
import copy
import functools
import json
import re
from pathlib import Path

import pytest

from pipeline.benchmarks.extraction import extract_number, numbers_match, parse_gold_number
from pipeline.benchmarks.metrics import load_metric
from pipeline.errors import PipelineError
from pipeline.worlds import languages as world
from pipeline.worlds.languages import synthetic_language as syn
from pipeline.worlds.languages.language_set import _make_languages_cached
from pipeline.worlds.languages.sources import _inputs

TRAINING = ["english_train", "hrl_translation_train", "hrl_math_train", "lrl_monolingual_train",
            "lrl_bitext_train", "composition_train"]
EVALUATION = ["flores_lrl_test", "flores_hrl_test", "math_lrl_test", "math_hrl_test"]
DEV = ["translation_dev", "math_dev"]


def default_cfg() -> dict:
    """The world's data settings at the default (cpu) preset, as conf/ composes them."""
    return copy.deepcopy(_composed_data())


@functools.lru_cache(maxsize=1)
def _composed_data() -> dict:
    from pipeline.params import compose_params

    return compose_params(["world=[languages]"])["worlds"]["languages"]["data"]


def _require_benchmarks(cfg):
    root = Path(cfg["benchmarks_dir"])
    if not (root / "flores200" / "devtest" / "eng_Latn.devtest").is_file() or not (root / "gsm8k").is_dir():
        pytest.skip(f"benchmark data not at {root}")


@pytest.fixture(scope="module")
def full_cfg():
    cfg = default_cfg()
    _require_benchmarks(cfg)
    return cfg


@pytest.fixture(scope="module")
def small_cfg():
    cfg = default_cfg()
    _require_benchmarks(cfg)
    cfg["languages"] = {"lrl": {"lij": "near", "mar": "far", "smo": "far", "tha": "near", "pol": "far"},
                        "hrl": {"deu": "near", "fra": "far"}}
    cfg["english"] = dict(cfg["english"], python_docstrings=False)
    cfg["flores"] = dict(cfg["flores"], per_language=15)
    cfg["math"] = dict(cfg["math"], per_language_test=15)
    cfg["sizes"] = dict(cfg["sizes"], english_train=300, hrl_translation_per_language=60, math_train_per_language=40,
                        lrl_monolingual_per_language=80, lrl_bitext_per_language=20, dev_sentences=60,
                        dev_per_language=5, math_dev_expressions=30)
    return cfg


@pytest.fixture(scope="module")
def built(small_cfg, tmp_path_factory):
    d = tmp_path_factory.mktemp("languages")
    summary = world.build(small_cfg, d, seed=1)
    return d, summary


def _read(d, name):
    return [json.loads(line) for line in (Path(d) / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


def _flores(cfg):
    return _inputs(cfg)["flores"]


def _ascii(s):
    return all(32 <= ord(c) < 127 for c in s)


# ---------------------------------------------------------------- the languages


@pytest.mark.slow
def test_default_languages_are_many_marked_and_mixed(full_cfg):
    langs = world.make_languages(full_cfg)
    lrl = [l for l in langs.values() if l.resource == "lrl"]
    hrl = [l for l in langs.values() if l.resource == "hrl"]
    assert len(lrl) >= 25 and len(hrl) >= 5
    assert all(code.startswith("syn-") and code == f"syn-{l.source}" for code, l in langs.items())
    for group in (lrl, hrl):
        assert {l.kind for l in group} == {"near", "far"}
    far = [l for l in lrl if l.kind == "far"]
    assert all(l.cases and l.articles for l in far) and any(l.genitive_first for l in far)
    assert all(l.lexicon_size == full_cfg["lexicon_size"]["far"] for l in far)
    assert {l.script for l in lrl} >= {"Latin", "Devanagari", "Thai", "Arabic"}


def test_languages_are_seeded_and_deterministic(small_cfg):
    a = world.make_languages(small_cfg)
    _make_languages_cached.cache_clear()
    b = world.make_languages(small_cfg)
    assert a is not b
    for code in a:
        assert a[code].describe() == b[code].describe() and a[code].swap == b[code].swap
    other = world.make_languages(dict(small_cfg, language_seed=7))
    assert any(other[c].swap != a[c].swap or other[c].spelling != a[c].spelling for c in a)
    # a language does not depend on which others are listed
    alone = world.make_languages(dict(small_cfg, languages={"lrl": {"mar": "far"}, "hrl": {"fra": "far"}}))
    assert alone["syn-mar"].swap == a["syn-mar"].swap and alone["syn-fra"].spelling == a["syn-fra"].spelling


def test_spelling_is_a_prefix_free_code(full_cfg):
    for lang in world.make_languages(full_cfg).values():
        graphemes = list(lang.spelling.values())
        assert len(set(graphemes)) == len(graphemes)
        assert not any(g != h and h.startswith(g) for g in graphemes for h in graphemes), lang.code
        assert set("abcdefghijklmnopqrstuvwxyz") <= set(lang.spelling)
        assert lang.marker is None or lang.marker not in "".join(graphemes)
        assert all(s.startswith(lang.marker) and s.count(lang.marker) == 1 for s in lang.suffixes.values())


@pytest.mark.slow
def test_round_trip_on_every_flores_sentence_in_every_language(full_cfg):
    flores = [s for s in _flores(full_cfg) if _ascii(s)]
    assert len(flores) == 958
    for lang in world.make_languages(full_cfg).values():
        for s in flores:
            r = syn.render(s, lang)
            assert syn.unrender(r, lang) == s, (lang.code, s, r)
        assert sum(syn.render(s, lang) != s for s in flores) > 0.95 * len(flores)


def test_round_trip_on_training_text_and_any_word(full_cfg):
    pool = _inputs(full_cfg)["pool"]
    sample = pool[::25]
    words = ["zyzzyva", "qwxj", "a", "i", "thththth", "xylophones", "unbelievably", "flibbertigibbet"]
    for lang in world.make_languages(full_cfg).values():
        for s in sample:
            assert syn.unrender(syn.render(s, lang), lang) == s, (lang.code, s)
        for w in words:  # words never seen anywhere still have one rendering and come back
            assert lang.unrender_word(lang.render_word(w)) == w
            s = f"The {w} of the {w} in 3 {w}s, said Ms. {w.capitalize()}."
            assert syn.unrender(syn.render(s, lang), lang) == s


def test_names_and_numbers_are_kept(full_cfg):
    flores = [s for s in _flores(full_cfg) if _ascii(s)][:300]
    for lang in world.make_languages(full_cfg).values():
        for s in flores:
            tokens = syn._ENGLISH_TOKEN.findall(s)
            flags = syn._initial_flags(tokens)
            kept = [t for t, first in zip(tokens, flags)
                    if t.isdigit() or (t[0].isalpha() and not t.islower() and not (first and t.istitle()))]
            out_tokens = set(lang._token.findall(syn.render(s, lang)))
            assert all(t in out_tokens for t in kept), (lang.code, s)
    lang = world.make_languages(full_cfg)["syn-pol"]
    out = syn.render("Yesterday Maria paid 1,250 dollars to NASA in Nairobi on 12 May 2021.", lang)
    for t in ("Maria", "1", "250", "NASA", "Nairobi", "12", "May", "2021"):
        assert re.search(rf"(?<![\w]){t}(?![\w])", out), (t, out)


def test_near_languages_stay_near_and_far_ones_are_far(full_cfg):
    from sacrebleu.metrics import CHRF
    flores = [s for s in _flores(full_cfg) if _ascii(s)][:150]
    chrf1 = CHRF(beta=1)
    for lang in world.make_languages(full_cfg).values():
        if lang.script != "Latin":
            continue
        same = chrf1.corpus_score([syn.render(s, lang) for s in flores], [flores]).score
        if lang.kind == "near":  # copying the input already scores: mostly spelling changes
            assert same > 30, (lang.code, same)
        else:  # little beyond names, numbers and punctuation survives
            assert same < 28, (lang.code, same)


def test_unrender_rejects_text_it_never_wrote(full_cfg):
    lang = world.make_languages(full_cfg)["syn-pol"]
    with pytest.raises(ValueError):
        lang.unrender_word("q" + lang.marker)  # the suffix marker is never part of a word
    with pytest.raises(ValueError):
        world.make_languages(full_cfg)["syn-mar"].unrender_word("ab")  # Latin letters are no Devanagari word


# ---------------------------------------------------------------- the splits


def test_build_is_deterministic_and_seeded(small_cfg, built, tmp_path):
    d, summary = built
    world.build(small_cfg, tmp_path / "again", seed=1)
    world.build(small_cfg, tmp_path / "other", seed=2)
    names = sorted(p.name for p in Path(d).iterdir())
    assert names == sorted([f"{n}.jsonl" for n in TRAINING + EVALUATION + DEV] + ["summary.json"])
    for name in names:
        assert (Path(d) / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    for name in EVALUATION:  # the evaluation sets follow eval_seed, not the data seed
        assert (Path(d) / f"{name}.jsonl").read_bytes() == (tmp_path / "other" / f"{name}.jsonl").read_bytes()
    assert (Path(d) / "english_train.jsonl").read_bytes() != (tmp_path / "other" / "english_train.jsonl").read_bytes()
    assert json.loads((Path(d) / "summary.json").read_text()) == summary


def test_model_data_and_metrics_name_written_splits(built):
    d, summary = built
    written = set(summary["files"])
    assert set(world.EVALUATION_METRICS) <= written
    assert {s for splits in world.MODEL_DATA.values() for s in splits} == set(TRAINING)
    assert set(TRAINING + EVALUATION + DEV) == written


def test_rows_and_groups(small_cfg, built):
    d, summary = built
    langs = world.make_languages(small_cfg)
    lrl = [c for c, l in langs.items() if l.resource == "lrl"]
    hrl = [c for c, l in langs.items() if l.resource == "hrl"]
    for name in TRAINING + EVALUATION + DEV:
        rows = _read(d, name)
        assert rows and all(isinstance(r["prompt"], str) and isinstance(r["target"], str) and r["target"]
                            for r in rows), name
        assert summary["files"][name]["rows"] == len(rows)
    groups = lambda name: {r["group"] for r in _read(d, name)}  # noqa: E731
    assert groups("flores_lrl_test") == groups("math_lrl_test") == groups("lrl_monolingual_train") == set(lrl)
    assert groups("flores_hrl_test") == groups("hrl_translation_train") == set(hrl)
    assert groups("math_hrl_test") == groups("hrl_math_train") == set(hrl) | {"en"}
    assert groups("composition_train") == set(lrl)
    assert all(r["prompt"] == "" for name in ("english_train", "lrl_monolingual_train") for r in _read(d, name))
    # bitext: plain text, or (bitext_format: task, the cpu preset) XX -> En rows in the translation format
    as_task = small_cfg.get("bitext_format") == "task"
    assert all(r["prompt"] == "" or (as_task and r["prompt"].startswith(f"<{r['group']}> ") and r["prompt"].endswith(" = "))
               for r in _read(d, "lrl_bitext_train"))
    # each language's evaluation rows are the same sentences / problems, in the same order
    flores = _read(d, "flores_lrl_test")
    per = {}
    for r in flores:
        per.setdefault(r["group"], []).append(r["id"])
    assert len({tuple(v) for v in per.values()}) == 1 and len(per[lrl[0]]) == summary["flores"]["units_per_language"]
    sentences = {i.split("-")[2] for i in per[lrl[0]]}  # flores-devtest-<sentence>[-<segment>]
    assert len(sentences) == small_cfg["flores"]["per_language"]


def test_evaluation_rows_are_real_flores_and_round_trip(small_cfg, built):
    d, _ = built
    flores = _flores(small_cfg)
    langs = world.make_languages(small_cfg)
    for name in ("flores_lrl_test", "flores_hrl_test"):
        for r in _read(d, name):
            _, _, i, *k = r["id"].split("-")
            unit = world.segments(flores[int(i)], small_cfg.get("segment_words"))[int(k[0]) if k else 0]
            assert r["target"] == r["reference"] == unit
            assert len(flores[int(i)]) <= small_cfg["flores"]["max_chars"]
            prefix = f"<{r['group']}> "
            assert r["prompt"].startswith(prefix) and r["prompt"].endswith(" = ")
            text = r["prompt"][len(prefix):-3]
            assert syn.unrender(text, langs[r["group"]]) == unit


def test_evaluation_targets_score_perfectly_through_the_real_scorers(built):
    d, _ = built
    chrf = load_metric("chrf")
    for name in ("flores_lrl_test", "flores_hrl_test", "translation_dev"):
        rows = _read(d, name)
        for g in {r["group"] for r in rows}:
            mine = [r for r in rows if r["group"] == g]
            refs = [r["reference"] for r in mine]
            assert chrf.compute(predictions=[r["target"] for r in mine], references=refs) == \
                {"chrf1": 100.0, "chrf2": 100.0}
            wrong = chrf.compute(predictions=[r["prompt"] for r in mine], references=refs)["chrf1"]
            assert wrong < 100.0
    for name in ("math_lrl_test", "math_hrl_test", "math_dev"):
        rows = _read(d, name)
        assert all(numbers_match(extract_number(r["target"]), parse_gold_number(str(r["reference"]))) for r in rows)
        assert not all(numbers_match(extract_number(str(r["reference"] + 1)), float(r["reference"])) for r in rows)


def test_math_rows_are_correct_one_step_problems(small_cfg, built):
    d, _ = built
    for name in ("hrl_math_train", "math_hrl_test", "math_lrl_test", "math_dev"):
        for r in _read(d, name):
            a, op, b = re.fullmatch(r"(\d+)([-+*/])(\d+)", r["expression"]).groups()
            value = {"+": int(a) + int(b), "-": int(a) - int(b)}[op]
            assert value >= 0 and r["target"] == world.math_answer({"a": int(a), "op": op, "b": int(b), "value": value},
                                                                   small_cfg["math"]["answer_format"])
            assert int(r["target"].split("=")[-1]) == value and r.get("reference", value) == value
            assert op in small_cfg["math"]["ops"] and int(a) <= small_cfg["math"]["max_operand"]
            assert a in r["prompt"] and b in r["prompt"]  # numbers kept in every language
    en = [r for r in _read(d, "math_hrl_test") if r["group"] == "en"]
    assert all(r["prompt"].startswith("<en> Q: ") and r["prompt"].endswith(" A: ") for r in en)


def _training_texts(d):
    texts = []
    for name in TRAINING:
        for r in _read(d, name):
            texts.append(r["prompt"] + r["target"])
    return texts


def test_no_flores_devtest_sentence_in_any_training_file(small_cfg, built):
    d, _ = built
    texts = _training_texts(d)
    blob = "\n".join(texts)
    flores = _flores(small_cfg)
    langs = world.make_languages(small_cfg)
    for s in flores:
        assert s not in blob
    for lang in langs.values():  # nor any of them rendered
        for s in flores:
            if _ascii(s):
                assert syn.render(s, lang) not in blob
    # nor a near copy: no training text shares an 8-word n-gram with a FLORES sentence
    n = small_cfg["english"]["near_copy_ngram"]
    flores_grams = set().union(*(world.ngrams(s, n) for s in flores))
    assert not any(world.ngrams(t, n) & flores_grams for t in texts)
    # and the dev sentences are in no training file either
    dev = {r["reference"] for r in _read(d, "translation_dev")}
    train_english = {r["target"] for r in _read(d, "english_train")} | \
                    {r["target"] for r in _read(d, "hrl_translation_train")}
    assert not dev & train_english


def test_gsm8k_test_items_absent_from_training(small_cfg, built):
    d, summary = built
    inputs = _inputs(small_cfg)
    blob = "\n".join(_training_texts(d))
    for row in inputs["gsm_test"]:
        assert " ".join(row["question"].split()) not in blob
    test_sentences = {world.normalise(s) for s in world.gsm_question_sentences(inputs["gsm_test"])}
    english = [r["target"] for r in _read(d, "english_train")]
    assert not any(world.normalise(s) in test_sentences for s in english)
    test_exprs = world.all_annotation_expressions(inputs["gsm_test"])
    evaluated = {r["expression"] for r in _read(d, "math_lrl_test")}
    assert evaluated and all(tuple((int(a), o, int(b))) in test_exprs for a, o, b in
                             (re.fullmatch(r"(\d+)([-+*/])(\d+)", e).groups() for e in evaluated))
    for name in ("hrl_math_train", "math_dev"):
        for r in _read(d, name):
            a, o, b = re.fullmatch(r"(\d+)([-+*/])(\d+)", r["expression"]).groups()
            assert (int(a), o, int(b)) not in test_exprs
    assert not {r["expression"] for r in _read(d, "math_dev")} & {r["expression"] for r in _read(d, "hrl_math_train")}
    assert summary["math"]["test_expressions_excluded_from_training"] == len(test_exprs)


def test_composition_data_is_five_percent_of_mA_data_in_task_format(small_cfg, built):
    d, summary = built
    langs = world.make_languages(small_cfg)
    mono, bitext, dc = (_read(d, n) for n in ("lrl_monolingual_train", "lrl_bitext_train", "composition_train"))
    assert abs(len(dc) / (len(mono) + len(bitext)) - small_cfg["composition"]["fraction"]) < 0.01
    ma_text = "\n".join(r["prompt"] + r["target"] for r in mono + bitext)
    for r in dc:
        assert r["prompt"].startswith(f"<{r['group']}> ") and r["prompt"].endswith(" = ")
        assert r["prompt"][:-3] in ma_text  # the same LRL sentence is in mA's data
        assert syn.unrender(r["prompt"][len(r["group"]) + 3:-3], langs[r["group"]]) == r["target"]
    assert summary["composition"]["rows"] == len(dc)


def test_vocabulary_covers_every_character_written(small_cfg, built):
    d, summary = built
    vocab = world.vocabulary(small_cfg)
    assert len(vocab) == len(set(vocab)) and all(len(c) == 1 for c in vocab)
    vs = set(vocab)
    for p in Path(d).iterdir():
        raw = p.read_text(encoding="utf-8")
        assert set(raw) - {"\n"} <= vs, (p.name, set(raw) - vs)
        if p.suffix == ".jsonl":
            for line in raw.splitlines():
                for v in json.loads(line).values():
                    if isinstance(v, str):
                        assert set(v) <= vs, (p.name, set(v) - vs)
    assert summary["vocabulary_size"] == len(vocab)


def test_vocabulary_covers_every_language_of_the_default_config(full_cfg):
    vs = set(world.vocabulary(full_cfg))
    flores = [s for s in _flores(full_cfg) if _ascii(s)][:100]
    for lang in world.make_languages(full_cfg).values():
        for s in flores:
            assert set(world.translation_prompt(lang.code, syn.render(s, lang))) <= vs


def test_missing_benchmarks_fail_with_one_clear_line(small_cfg, tmp_path):
    cfg = dict(small_cfg, benchmarks_dir=str(tmp_path / "nowhere"))
    with pytest.raises(PipelineError) as e:
        world.build(cfg, tmp_path / "out", seed=0)
    message = str(e.value)
    assert "\n" not in message and str(tmp_path / "nowhere") in message


def test_summary_reports_sources_and_exclusions(built):
    _, summary = built
    assert summary["english"]["pool_units"] > 10000
    assert set(summary["english"]["excluded"]) >= {"flores_devtest_near_copy", "gsm8k_test_near_copy"}
    assert summary["flores"]["non_ascii_excluded"] == 54
    assert summary["round_trip_verified"] is True
    assert set(summary["language_details"]) == set(summary["languages"]["lrl"] + summary["languages"]["hrl"])


def test_round_trip_on_random_ascii_text(full_cfg):
    """Any printable-ASCII text comes back: random mixes of function words, names, pseudo-words, digits,
    punctuation and odd spacing (reversibility does not depend on the text being well formed)."""
    import random
    rnd = random.Random(0)
    langs = list(world.make_languages(full_cfg).values())
    words = ["the", "a", "an", "of", "in", "to", "for", "on", "with", "at", "from", "by", "house", "big", "The",
             "Of", "A", "I", "NASA", "iPhone", "Paris", "x", "running", "walked", "s", "and", "is", "thing", "queen"]
    words += [q for lang in langs for q in list(lang.swap)[:10]]
    glue = [" ", " ", " ", "  ", ", ", ". ", "! ", "? ", ".", "-", "'", '"', "(", ")", ":", "3", "42", "1,000", "$"]
    for _ in range(150):
        parts = []
        for _ in range(rnd.randint(1, 14)):
            if rnd.random() < 0.85:
                parts.append(rnd.choice(words))
            else:
                parts.append("".join(rnd.choice("abcdefghijklmnopqrstuvwxyzABC") for _ in range(rnd.randint(1, 8))))
            parts.append(rnd.choice(glue))
        s = "".join(parts)
        for lang in langs:
            assert syn.unrender(syn.render(s, lang), lang) == s, (lang.code, s)


def test_segments_cover_the_sentence_and_none_in_training_equals_a_flores_segment(small_cfg, built):
    d, summary = built
    words = small_cfg["segment_words"]
    assert words, "the default cfg translates segments"
    for text in ["one", "one two", "a b c d e", "a b c d e f g h i", "The movie, featuring Ryan Gosling and Emma Stone."]:
        segs = world.segments(text, words)
        assert " ".join(segs) == text and all(1 <= len(s.split(" ")) <= words + 1 for s in segs)
        assert len(segs) == 1 or all(len(s.split(" ")) >= 2 for s in segs)
    assert world.segments("a b c d e f", None) == ["a b c d e f"]
    flores_segments = {world.normalise(u) for s in _flores(small_cfg) for u in world.segments(s, words)}
    english = [r["target"] for r in _read(d, "english_train")] + [r["target"] for r in _read(d, "hrl_translation_train")]
    assert not any(world.normalise(u) in flores_segments for u in english)
    assert summary["flores"]["training_segments_equal_to_a_flores_segment_dropped"] > 0  # the check had work to do


def test_bitext_direction_and_format_options(small_cfg, tmp_path):
    langs = world.make_languages(small_cfg)
    lrl = [c for c, l in langs.items() if l.resource == "lrl"]
    n = small_cfg["sizes"]["lrl_bitext_per_language"]
    # the world's default: half of each language's pairs XX -> En, half En -> XX, plain text that round-trips
    world.build(dict(small_cfg, bitext_to_english=0.5, bitext_format="text"), tmp_path / "text", seed=1)
    default = _read(tmp_path / "text", "lrl_bitext_train")
    assert len(default) == n * len(lrl)
    to_en = [r for r in default if r["target"].startswith(f"<{r['group']}> ")]
    assert len(to_en) == len(default) // 2
    for r in default:
        code, (first, second) = r["group"], r["target"].split(" = ", 1)
        xx, en = (first, second) if r in to_en else (second, first[len("<en> "):])
        assert syn.unrender(xx[len(code) + 3:], langs[code]) == en
    # every pair XX -> En in the translation format (loss on the English only), the same sentences
    world.build(dict(small_cfg, bitext_to_english=1.0, bitext_format="task"), tmp_path / "task", seed=1)
    task = _read(tmp_path / "task", "lrl_bitext_train")
    assert len(task) == len(default)
    assert all(r["prompt"] == world.translation_prompt(r["group"], syn.render(r["target"], langs[r["group"]]))
               for r in task)
    assert {r["target"].split(" = ", 1)[1] for r in to_en} < {r["target"] for r in task}
    for bad in ({"bitext_to_english": 1.5}, {"bitext_format": "bitext"}):
        with pytest.raises(PipelineError, match=next(iter(bad))):
            world.build(dict(small_cfg, **bad), tmp_path / "bad", seed=1)
