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


def test_distill_rows_take_mA_reading_as_the_target_and_two_shot_puts_the_evaluation_exemplars_in_front(tmp_path):
    """--distill (B16, B18): each row's target is the candidate's `roundtrip`, never its English; zero_shot keeps the
    kept candidates, --usable every candidate with a usable source and reading (a loop or an empty reading is
    dropped); two_shot puts devtest lines 1008-1009 of the row's language in front, as every evaluation prompt."""
    import pytest

    from tests.support.fresh_repo import BENCHMARKS, HAS_BENCHMARKS
    if not HAS_BENCHMARKS:
        pytest.skip("needs ../shared/benchmarks")

    def candidate(source, roundtrip, kept, **extra):
        return {"group": "pol_Latn", "english": f"English of {source}.", "source": source, "roundtrip": roundtrip,
                "empty": not source, "copy_chrf": 10.0, "degenerate": False, "roundtrip_chrf": 30.0 if kept else 5.0,
                "kept": kept, **extra}

    candidates = [candidate("Ala ma kota.", "Ala has a cat.", True),
                  candidate("Ola biega.", "Ola is running away.", False),        # read loosely: usable, not kept
                  candidate("Ewa je.", "eats eats eats eats", False),            # a loop in the reading
                  candidate("Iza pisze.", "", False)]                            # no reading
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in candidates))

    def run(*flags):
        out = tmp_path / f"rows{len(flags)}.jsonl"
        command = [sys.executable, str(SCRIPT), "--candidates", str(tmp_path / "c.jsonl"), "--out", str(out),
                   "--benchmarks-dir", str(BENCHMARKS), *flags]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in out.read_text().splitlines()]

    zero = run("--distill", "zero_shot")
    assert [r["target"] for r in zero] == [" Ala has a cat.\n"]
    assert zero[0]["prompt"].endswith("Polish: Ala ma kota.\nEnglish:") and zero[0]["prompt"].count("Polish:") == 1
    two = run("--distill", "two_shot", "--usable")
    assert sorted(r["target"] for r in two) == [" Ala has a cat.\n", " Ola is running away.\n"]
    from pipeline.benchmarks.data import load_flores
    polish, english = (load_flores(x, local_dir=str(BENCHMARKS / "flores200"), hub_id=None)
                       for x in ("pol_Latn", "eng_Latn"))
    for r in two:
        assert r["prompt"].count("Polish:") == 3 and r["prompt"].count("English:") == 3
        assert all(f"Polish: {polish[i]}\nEnglish: {english[i]}\n" in r["prompt"] for i in (1008, 1009))
        assert r["prompt"].endswith(f"Polish: {'Ala ma kota.' if 'Ala' in r['target'] else 'Ola biega.'}\nEnglish:")
    layout_only = run("--distill", "two_shot", "--english-target")   # B19: the kept rows, only the layout changes
    assert [r["target"] for r in layout_only] == [" English of Ala ma kota..\n"]
    assert layout_only[0]["prompt"] == next(r["prompt"] for r in two if "Ala" in r["target"])
    missing = subprocess.run([sys.executable, str(SCRIPT), "--distill", "zero_shot", "--candidates",
                              str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "x.jsonl")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.strip().startswith("error: --distill: no candidates file")
    assert not (tmp_path / "x.jsonl").exists()
