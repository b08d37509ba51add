"""experiments/table1/error_breakdown.py --by-key: each wrong copy of a held-out key's value is counted once, under
its key, as a value cut short, a value run on, or another number; a right copy and a right row count nothing."""

from tests.support.experiment_scripts import load_experiment

error_breakdown = load_experiment("table1/error_breakdown.py")


def row(prompt, target, prediction, correct=False):
    return {"set": "kv_math_test", "prompt": prompt, "target": target, "prediction": prediction, "correct": correct}


def test_wrong_copies_are_counted_by_key_and_kind():
    rows = [row("ab+cd=", "73+20=39", "7+20=72"),       # ab cut short, cd right
            row("ab+ef=", "73+9=28", "73+99=271"),      # ef run on (9 -> 99)
            row("cd+ef=", "20+9=92", "21+8=92"),        # both another number, the sum right: still two wrong copies
            row("ab+cd=", "73+20=39", "=39"),            # nothing copied: ab cut short to nothing, cd too
            row("ab+cd=", "73+20=39", "73+20=39", correct=True)]
    assert error_breakdown.wrong_copies(rows) == {
        ("ab", "73", "shorter"): 2, ("ef", "9", "longer"): 1, ("cd", "20", "other"): 1, ("ef", "9", "other"): 1,
        ("cd", "20", "shorter"): 1}
