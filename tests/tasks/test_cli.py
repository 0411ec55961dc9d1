"""`m1 tasks logic|code` on a fresh M1_HOME, and their one-line errors that write nothing."""

from __future__ import annotations

import sys

import prefect.main  # noqa: F401 - Prefect sets its log handlers up now, on the real streams, not CliRunner's
import pytest
from typer.testing import CliRunner

from flows.cli import app, main
from flows.store import DatasetStore


def m1(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """The real console entry point (`flows.cli.main`, in process): (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["m1", *args])
    with pytest.raises(SystemExit) as done:
        main()
    return done.value.code, capsys.readouterr().err


def test_round_trip_on_a_fresh_home(prefect_harness, m1_home):
    runner = CliRunner()
    logic = runner.invoke(
        app, ["tasks", "logic", "-s", "name=r", "-s", "logic.n_items=14"], terminal_width=200
    )
    assert logic.exit_code == 0, logic.output
    assert "r-synlogic@v1: " in logic.output and "bit_manipulation" in logic.output
    assert "band 1..2 (default)" in logic.output and "0 of " in logic.output
    code = runner.invoke(
        app,
        ["tasks", "code", "--set", "name=r", "-s", "code.n_problems=4", "-s", "code.tests_per_problem=3"],
        terminal_width=200,
    )
    assert code.exit_code == 0, code.output
    assert "r-code@v1: 4 items, 0 quarantined" in code.output and "reference-check" in code.output
    assert "built because: first build; 0 of " in code.output
    store = DatasetStore(m1_home)
    assert store.names() == ["r-code", "r-synlogic"]
    assert store.manifest("r-code").parents == [] and store.manifest("r-synlogic").parents == []
    again = runner.invoke(
        app, ["tasks", "logic", "-s", "name=r", "-s", "logic.n_items=14"], terminal_width=200
    )  # the code dataset now exists: the logic dataset does not depend on it, nothing runs
    assert again.exit_code == 0 and "r-synlogic@v1" in again.output, again.output
    assert (
        "unchanged: built from the same inputs before (built because: first build); nothing ran"
        in again.output
    )
    more = runner.invoke(
        app, ["tasks", "logic", "-s", "name=r", "-s", "logic.n_items=15"], terminal_width=200
    )
    assert more.exit_code == 0 and "r-synlogic@v2" in more.output, more.output
    assert "built because: logic.n_items 14 -> 15; " in more.output and "resumed from cache" in more.output


def test_bad_config_is_one_line_exit_2_and_writes_nothing(m1_home, tmp_path, monkeypatch, capsys):
    for args, message in [
        (
            ["tasks", "logic", "-s", "logic.tasks=[sudoku, sodoku]"],
            "logic.tasks: unknown logic task 'sodoku'",
        ),
        (
            ["tasks", "code", "-s", "code.n_problems=0", "-c", str(tmp_path / "none.toml")],
            "none.toml: config file not found",
        ),
    ]:
        code, err = m1(monkeypatch, capsys, *args)
        assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not m1_home.exists()
