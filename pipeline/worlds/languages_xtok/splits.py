"""`build(cfg, out_dir, seed)` of the cross-tokenizer language world: its splits (JSONL rows {prompt, target, ...})
and summary.json, from FLORES-200 devtest (flores_lines.py's partition), the UDHR (udhr.py) and GSM8K train
questions (English prose).

  composition_train  D_C: UDHR `train` pairs XX->English of every language with a translation, in the evaluation's
                     prompt layout (pipeline.benchmarks.flores_gsm_tasks.flores_prompt): zero-shot (the instruction
                     line, "<Language>: <source>", "English:") or, with `composition.layout: two_shot`, behind the two
                     FLORES exemplars every test prompt shows; target " <English>\\n" (the evaluation stops at the
                     newline). `composition.layout: source_text` holds the language's side alone as plain text
                     (prompt "", no English: the paper's kind of D_C for §4.2, text in the languages, which mB can
                     only learn to predict by reading mA). Rows longer than `composition.max_row_chars` (source +
                     English) are left out.
  composition_dev    the UDHR `dev` pairs (articles 26-30), the same layout: for choices; no model trains on it
  english_replay     GSM8K train questions as plain English text (prompt ""): the anchor's rows for `anchor_replay`
  flores_test        `flores.test` TEST lines (flores_lines.test_lines) x the world's languages, 2-shot from the
                     exemplar lines, group = the language, id = "<language>-<line>"
  flores_dev         the same on `flores.dev` DEV lines: written for choices, never evaluated by the stages
  bpb_prose_test     `english.bpb_prose` GSM8K train questions (prompt ""), none of them in english_replay

The summary holds the two floors of flores_test (no model): `unrelated English` (each reference scored against
the next test line's English) and `copied source` (each source sentence as its own answer), corpus chrF1 and chrF2
per language with sacrebleu (pipeline.benchmarks.metrics, as the chrf metric scores). `eval_seed` draws the
English prose; `seed` is unused (the splits do not depend on it).
"""
from __future__ import annotations

import hashlib
import random
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io import atomic_write_jsonl
import pipeline.worlds.languages_xtok.flores_lines as flores_lines
import pipeline.worlds.languages_xtok.udhr as udhr

LAYOUTS = ("zero_shot", "two_shot", "source_text")


def _flores_dir(cfg: dict) -> Path:
    return Path(cfg["benchmarks_dir"]).expanduser() / "flores200"


def _gsm8k_train(cfg: dict) -> Path:
    return Path(cfg["benchmarks_dir"]).expanduser() / "gsm8k" / "train.jsonl"


def languages(cfg: dict) -> list[str]:
    """The world's FLORES languages (XX->English), checked against flores_lines.LANGUAGES."""
    chosen = list(cfg.get("languages") or flores_lines.LANGUAGES)
    unknown = [x for x in chosen if x not in flores_lines.LANGUAGES]
    if unknown or len(set(chosen)) != len(chosen):
        raise PipelineError(f"languages_xtok: languages must be distinct codes of {', '.join(flores_lines.LANGUAGES)}; "
                            f"got {', '.join(chosen)}")
    return chosen


def udhr_languages(cfg: dict) -> list[str]:
    """The world's languages that have a UDHR translation (D_C's languages)."""
    return [x for x in languages(cfg) if x in udhr.TRANSLATIONS]


def input_files(cfg: dict) -> list[Path]:
    """The files build() reads outside the repository's code: FLORES devtest of English and each language, GSM8K
    train (English prose) and the UDHR declarations (the English one and each language's translations used)."""
    files = [_flores_dir(cfg) / "devtest" / f"{x}.devtest" for x in [flores_lines.TARGET, *languages(cfg)]]
    files.append(_gsm8k_train(cfg))
    root = Path(cfg["udhr_dir"])
    versions = (cfg.get("composition") or {}).get("versions", "default")
    codes = [udhr.ENGLISH] + [c for x in udhr_languages(cfg) for c in udhr.translations(x, versions)]
    return files + [root / "declaration" / f"{c}.html" for c in codes]


def benchmark_files(cfg: dict) -> list[Path]:
    """For the data stage's DVC deps, the folders and file that hold input_files (the stage has a few slots, and the
    files are ~27): FLORES-200 devtest, GSM8K train, the UDHR package's declarations."""
    return [_flores_dir(cfg) / "devtest", _gsm8k_train(cfg), Path(cfg["udhr_dir"]) / "declaration"]


def translation_prompt(language: str, source: str, exemplars: list[tuple[str, str]]) -> str:
    """The project's FLORES prompt from `language` into English with these exemplars."""
    from pipeline.benchmarks.flores_gsm_tasks import FLORES_LANGUAGE_NAMES, flores_prompt

    return flores_prompt(FLORES_LANGUAGE_NAMES[language], FLORES_LANGUAGE_NAMES[flores_lines.TARGET], exemplars, source)


def _read_flores(cfg: dict, langs: list[str]) -> dict[str, list[str]]:
    from pipeline.benchmarks.data import load_flores
    from pipeline.benchmarks.errors import BenchmarkError

    texts = {}
    for x in [flores_lines.TARGET, *langs]:
        try:
            texts[x] = load_flores(x, local_dir=str(_flores_dir(cfg)), hub_id=None)
        except BenchmarkError as e:
            raise PipelineError(f"languages_xtok: {e}") from None
        if len(texts[x]) != flores_lines.DEVTEST_LINES:
            raise PipelineError(f"languages_xtok: FLORES-200 {x} devtest has {len(texts[x])} lines, expected "
                                f"{flores_lines.DEVTEST_LINES}")
    return texts


def _shots(texts: dict, language: str) -> list[tuple[str, str]]:
    return [(texts[language][i], texts[flores_lines.TARGET][i]) for i in flores_lines.SHOT_LINES]


def flores_rows(texts: dict, langs: list[str], lines: list[int], split: str) -> list[dict]:
    """2-shot XX->English rows of these devtest lines, language by language."""
    english = texts[flores_lines.TARGET]
    return [{"prompt": translation_prompt(x, texts[x][i], _shots(texts, x)), "target": english[i], "group": x,
             "id": f"{x}-{i}", "line": i, "source": texts[x][i], "task": split}
            for x in langs for i in lines]


def composition_rows(cfg: dict, texts: dict, split: str) -> tuple[list[dict], int]:
    """D_C rows of a UDHR split in the configured layout, and how many pairs max_row_chars left out."""
    comp = cfg.get("composition") or {}
    layout, limit = comp.get("layout", "zero_shot"), comp.get("max_row_chars")
    if layout not in LAYOUTS:
        raise PipelineError(f"languages_xtok: composition.layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise PipelineError(f"languages_xtok: composition.max_row_chars must be a positive integer or null, not {limit!r}")
    rows, dropped = [], 0
    for x in udhr_languages(cfg):
        shots = _shots(texts, x) if layout == "two_shot" else []
        for pair in udhr.parallel_pairs(x, split, versions=comp.get("versions", "default"), root=cfg["udhr_dir"]):
            if limit is not None and len(pair["source"]) + len(pair["target"]) > limit:
                dropped += 1
                continue
            row_id = f"udhr-{pair['declaration']}-{pair['section']}-{pair['index']}"
            if layout == "source_text":   # the language's text alone, no English: mB learns to read it through mA
                rows.append({"prompt": "", "target": pair["source"], "group": x, "id": row_id, "unit": pair["unit"],
                             "task": "udhr_text"})
                continue
            rows.append({"prompt": translation_prompt(x, pair["source"], shots), "target": f" {pair['target']}\n",
                         "group": x, "id": row_id, "unit": pair["unit"], "task": "udhr_translation"})
    if not rows:
        raise PipelineError(f"languages_xtok: no UDHR {split} rows (languages {', '.join(languages(cfg))}; "
                            f"max_row_chars {limit})")
    return rows, dropped


def english_prose(cfg: dict) -> tuple[list[dict], list[dict]]:
    """(english_replay, bpb_prose_test): disjoint draws of distinct GSM8K train questions (eval_seed)."""
    from pipeline.benchmarks.data import read_benchmark_jsonl

    spec = cfg.get("english") or {}
    n_replay, n_bpb = spec.get("replay", 0), spec.get("bpb_prose", 0)
    if not all(isinstance(n, int) and n >= 0 for n in (n_replay, n_bpb)) or n_bpb == 0:
        raise PipelineError(f"languages_xtok: english must be {{replay: n >= 0, bpb_prose: n > 0}}, not {dict(spec)}")
    questions = list(dict.fromkeys(" ".join(r["question"].split()) for r in read_benchmark_jsonl(_gsm8k_train(cfg))))
    if n_replay + n_bpb > len(questions):
        raise PipelineError(f"languages_xtok: english asks for {n_replay + n_bpb} GSM8K train questions, "
                            f"{len(questions)} distinct ones exist")
    picked = random.Random(f"{cfg['eval_seed']}:english_prose").sample(range(len(questions)), n_replay + n_bpb)
    rows = [{"prompt": "", "target": questions[i], "id": f"gsm8k-train-question:{i}", "group": "english_prose"}
            for i in picked]
    return ([dict(r, task="english_replay") for r in rows[:n_replay]],
            [dict(r, task="bpb_prose") for r in rows[n_replay:]])


def floors(rows: list[dict], texts: dict) -> dict:
    """chrF of two answers no model gives, per language of `rows` (flores_test): `unrelated_english` scores each
    reference against the English of the next row's line (the last against the first), `copied_source` against the
    source sentence itself."""
    from pipeline.benchmarks.metrics import load_metric

    chrf = load_metric("chrf")   # sacrebleu's corpus chrF, as pipeline.scoring's chrf metric computes it
    english, out = texts[flores_lines.TARGET], {}
    for name, answer in (("unrelated_english", None), ("copied_source", "source")):
        per = {}
        for x in dict.fromkeys(r["group"] for r in rows):
            mine = [r for r in rows if r["group"] == x]
            answers = ([english[mine[(k + 1) % len(mine)]["line"]] for k in range(len(mine))] if answer is None
                       else [r["source"] for r in mine])
            scores = chrf.compute(predictions=[a.strip() for a in answers], references=[r["target"].strip() for r in mine])
            per[x] = {"chrf1": round(scores["chrf1"], 2), "chrf2": round(scores["chrf2"], 2)}
        out[name] = per
    return out


def _count(cfg: dict, key: str) -> int | None:
    """flores.test (at least 2: the unrelated-English floor pairs each reference with another test line's English)
    or flores.dev; None = every line of the slice."""
    n, least = (cfg.get("flores") or {}).get(key), 2 if key == "test" else 1
    if n is not None and (not isinstance(n, int) or n < least):
        raise PipelineError(f"languages_xtok: flores.{key} must be a number of sentences >= {least} or null (all), not {n!r}")
    return n


def build(cfg: dict, out_dir: Path, seed: int) -> dict:
    out_dir = Path(out_dir)
    langs = languages(cfg)
    udhr.package_dir(cfg["udhr_dir"])   # a missing package: one line naming `make udhr`
    texts = _read_flores(cfg, langs)
    english = texts[flores_lines.TARGET]
    test_lines = flores_lines.test_lines(english, _count(cfg, "test"))
    dev_lines = flores_lines.dev_lines(english, _count(cfg, "dev"))
    splits = {"flores_test": flores_rows(texts, langs, test_lines, "flores_test"),
              "flores_dev": flores_rows(texts, langs, dev_lines, "flores_dev")}
    splits["composition_train"], dropped_train = composition_rows(cfg, texts, "train")
    splits["composition_dev"], dropped_dev = composition_rows(cfg, texts, "dev")
    splits["english_replay"], splits["bpb_prose_test"] = english_prose(cfg)
    _check_disjoint(splits, texts, test_lines)
    files = {}
    for name, rows in splits.items():
        atomic_write_jsonl(out_dir / f"{name}.jsonl", rows)
        files[name] = {"rows": len(rows)}
    read = sorted(str(p) for p in input_files(cfg))
    digest = hashlib.sha256()
    for p in read:
        digest.update(p.encode() + b"\0" + Path(p).read_bytes())
    comp = cfg.get("composition") or {}
    return {
        "world": "languages_xtok", "languages": langs, "udhr_languages": udhr_languages(cfg),
        "no_udhr": {x: udhr.NO_TRANSLATION[x] for x in langs if x in udhr.NO_TRANSLATION},
        "files": files, "flores_test_lines": test_lines, "flores_dev_lines": dev_lines,
        "shot_lines": list(flores_lines.SHOT_LINES),
        "composition": {"layout": comp.get("layout", "zero_shot"), "versions": comp.get("versions", "default"),
                        "max_row_chars": comp.get("max_row_chars"), "dropped_train": dropped_train,
                        "dropped_dev": dropped_dev,
                        "per_language": {x: sum(1 for r in splits["composition_train"] if r["group"] == x)
                                         for x in udhr_languages(cfg)}},
        "bpb_prose": {"rows": len(splits["bpb_prose_test"]),
                      "bytes": sum(len(r["target"].encode()) for r in splits["bpb_prose_test"])},
        "floors": floors(splits["flores_test"], texts),
        "inputs_sha256": digest.hexdigest(),
    }


def _check_disjoint(splits: dict, texts: dict, test_lines: list[int]) -> None:
    """No FLORES TEST sentence (either side, any language) in a training or dev split's text."""
    test_text = {texts[x][i] for x in texts for i in test_lines}
    for name in ("composition_train", "composition_dev", "english_replay", "flores_dev"):
        for r in splits[name]:
            leaked = [t for t in test_text if t in r["prompt"] or t in r["target"]]
            if leaked:
                raise PipelineError(f"languages_xtok: {name} row {r['id']} holds the FLORES test sentence "
                                    f"{leaked[0][:60]!r}")
