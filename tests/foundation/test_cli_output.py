"""What `m1` prints when its output is not a terminal, and `m1 data show` on a version that is not there."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import polars as pl
import pytest

from flows.cli import main
from flows.store import DatasetStore, StepCount

REASON = "a reason long enough that a table eighty columns wide must wrap it onto a second line of text"


@pytest.fixture
def m1(monkeypatch, capsys, tmp_path):
    """The console entry point in process, its streams captured (no terminal): (exit code, out, err)."""
    monkeypatch.setenv("M1_HOME", str(tmp_path))
    monkeypatch.delenv("COLUMNS", raising=False)  # restored after the test, whatever main() sets

    def run(*args: str, columns: str | None = None):
        if columns:
            monkeypatch.setenv("COLUMNS", columns)
        monkeypatch.setattr(sys, "argv", ["m1", *args])
        with pytest.raises(SystemExit) as done:
            main()
            sys.exit(0)
        out = capsys.readouterr()
        return SimpleNamespace(code=done.value.code or 0, out=out.out, err=out.err)

    return run


def test_tables_are_not_cut_when_the_output_is_not_a_terminal(m1, tmp_path):
    DatasetStore(tmp_path).write("items", pl.DataFrame({"x": [1]}), steps=[StepCount("clean", 2, 1, REASON)])
    piped = m1("data", "show", "items")
    assert piped.code == 0, piped.err
    (row,) = [line for line in piped.out.splitlines() if "clean" in line]
    assert REASON in row  # the whole reason on the step's one line
    narrow = m1("data", "show", "items", columns="80")  # a width the user set still wins
    assert REASON not in narrow.out and max(map(len, narrow.out.splitlines())) <= 80


def test_data_show_of_a_missing_version_is_one_line_exit_2(m1, tmp_path):
    DatasetStore(tmp_path).write("items", pl.DataFrame({"x": [1]}))
    proc = m1("data", "show", "items", "--version", "9")
    assert proc.code == 2 and proc.out == ""
    assert proc.err.splitlines() == ["error: dataset 'items' has no version 9 (versions: v1)"]
    missing = m1("data", "show", "nope")
    assert missing.code == 2 and missing.err.startswith("error: dataset 'nope' does not exist")
    assert m1("data", "show", "items", "--version", "1").code == 0
