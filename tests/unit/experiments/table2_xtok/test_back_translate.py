"""experiments/table2_xtok/back_translate.py --merge: several runs' splits as one, each English target once, in an
order that only --seed decides (the dev runs B5 and B6 trained on such a merge)."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / "experiments" / "table2_xtok" / "back_translate.py"


def _split(path: Path, rows: list[tuple[str, str]]) -> str:
    path.write_text("".join(json.dumps({"prompt": f"P {src}", "target": f" {eng}\n", "group": "pol_Latn",
                                        "id": f"x-{i}", "task": "bt_english"}) + "\n"
                            for i, (src, eng) in enumerate(rows)))
    return str(path)


def _merge(tmp_path: Path, seed: int, *splits: str) -> list[dict]:
    out = tmp_path / f"merged-{seed}.jsonl"
    run = subprocess.run([sys.executable, str(SCRIPT), "--merge", *splits, "--seed", str(seed), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_merge_keeps_each_english_target_once_in_a_seeded_order(tmp_path):
    a = _split(tmp_path / "a.jsonl", [("ala", "Ann has 3 cats."), ("ola", "Bob runs 5 miles.")])
    b = _split(tmp_path / "b.jsonl", [("inna", "Ann has 3 cats."), ("ewa", "Cy buys 2 pens."), ("iza", "Di eats.")])
    merged = _merge(tmp_path, 5, a, b)
    assert sorted(r["target"] for r in merged) == [" Ann has 3 cats.\n", " Bob runs 5 miles.\n", " Cy buys 2 pens.\n",
                                                   " Di eats.\n"]
    assert {r["prompt"] for r in merged if r["target"] == " Ann has 3 cats.\n"} == {"P ala"}  # the first seen
    assert len({r["id"] for r in merged}) == 4
    assert _merge(tmp_path, 5, a, b) == merged
    orders = {tuple(r["target"] for r in _merge(tmp_path, s, a, b)) for s in range(6)}
    assert len(orders) > 1  # the seed decides the order


def test_sotu_sentences_keep_third_person_prose_of_the_years_asked_and_the_seed_decides_the_draw(tmp_path):
    """B12's English (--english-sotu): sentences of the addresses from 1960 on, in the third person, without quotes,
    brackets, dashes, semicolons or applause notes; a year before 1960 or a missing folder reads nothing."""
    import pytest
    from tests.support.experiment_scripts import load_experiment

    from pipeline.errors import UserError

    back_translate = load_experiment("table2_xtok/back_translate.py")
    (tmp_path / "1959_old_r.txt").write_text("The treaty was signed in the spring of that year.\n")
    (tmp_path / "2004_new_d.txt").write_text(
        "The economy grew faster than anyone expected.  We must act now.\n(Applause.) Prices fell (slowly) in May.\n"
        "Farmers in Iowa planted more corn; wheat fell. The bridge opened in June after four years of work. "
        'He said "no" twice. Congress passed the bill with votes from both parties. Short one.')
    drawn = back_translate.sotu_sentences(str(tmp_path), 3, 0, 20, 140)
    assert sorted(drawn) == ["Congress passed the bill with votes from both parties.",
                             "The bridge opened in June after four years of work.",
                             "The economy grew faster than anyone expected."]
    orders = {tuple(back_translate.sotu_sentences(str(tmp_path), 3, seed, 20, 140)) for seed in range(6)}
    assert len(orders) > 1 and all(sorted(o) == sorted(drawn) for o in orders)
    with pytest.raises(UserError, match="4 sentences asked, 3 qualify"):
        back_translate.sotu_sentences(str(tmp_path), 4, 0, 20, 140)
    with pytest.raises(UserError, match="no <year>_<president>.txt files"):
        back_translate.sotu_sentences(str(tmp_path / "nothing"), 1, 0, 20, 140)
