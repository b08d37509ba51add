"""pipeline.cli: what a stage's entry point does with an error."""
import sys

import pytest

from pipeline.cli import cli
from pipeline.errors import UserError


def test_a_user_error_is_one_line_and_exit_code_2(capsys):
    @cli
    def main(argv):
        raise UserError(f"bad key {argv[0]!r}")

    with pytest.raises(SystemExit) as stop:
        main(["kv/nothing"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: bad key 'kv/nothing'\n"


@pytest.mark.parametrize("processes", ["1", "2"])
def test_any_other_error_reaches_the_caller_as_itself(monkeypatch, processes):
    """A bug's own traceback, never one raised by the wrapper (it once named a variable of the other branch);
    under several processes a rank whose stderr pipeline.distributed silenced gets the terminal back."""
    monkeypatch.setenv("WORLD_SIZE", processes)
    monkeypatch.setattr(sys, "stderr", open("/dev/null", "w"))

    @cli
    def main(argv):
        raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError, match="a bug"):
        main([])
    assert (sys.stderr is sys.__stderr__) == (processes == "2")


@pytest.mark.parametrize("module", ["params", "train", "evaluate", "report", "build_data", "tokenizer", "synthesize",
                                    "figure", "launch", "records"])
def test_help_prints_the_entry_points_usage_and_runs_nothing(module, tmp_path, monkeypatch, capsys):
    """`--help` once reached Hydra as an override (a LexerNoViableAltException) or a stage as a world's name."""
    import importlib

    monkeypatch.chdir(tmp_path)
    importlib.import_module(f"pipeline.{module}").main(["--help"])
    out = capsys.readouterr()
    assert out.err == "" and f"python -m pipeline.{module}" in out.out, out
    assert list(tmp_path.iterdir()) == []
