"""The language world's lines under its report tables (`report_lines`)."""
from __future__ import annotations


def report_lines(cfg: dict, summary: dict, world_cfg: dict | None = None) -> list[str]:
    """Lines under the world's report tables: what the synthetic languages are."""
    langs = summary["languages"]
    return [
        f"Synthetic languages (seeded transforms of English; `syn-xxx` uses the letter statistics of xxx's UDHR "
        f"text, it is not that language): {len(langs['lrl'])} LRL, {len(langs['hrl'])} HRL; near: "
        f"{', '.join(langs['near'])}; far: {', '.join(langs['far'])}.",
        f"FLORES devtest: {summary['flores']['chosen']} English sentences of <= {summary['flores']['max_chars']} "
        f"characters (printable ASCII) rendered into every language; math: {summary['math']['test_problems_chosen']} "
        f"GSM8K test calculator steps ({' '.join(summary['math']['ops'])}, operands <= "
        f"{summary['math']['max_operand']}) as one-step word problems.",
    ]
