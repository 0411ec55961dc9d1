"""`m1 bench sandbox` prints the code verifier's time per item in every test form beside the
stdin/stdout form, on each backend, and refuses to time a form whose correct solution does not score 1."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.bench import sandbox as bench
from flows.cli import app


@pytest.mark.parametrize("backend", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_bench_sandbox_prints_time_per_item_by_form(backend):
    result = CliRunner().invoke(
        app,
        ["bench", "sandbox", "--runs", "1", "--items", "1", "--backends", backend],
        env={"COLUMNS": "250"},
    )
    assert result.exit_code == 0, result.output
    table = result.output.split("code verifier per item")[1]
    rows = {
        line.split("│")[1].strip(): line.split("│") for line in table.splitlines() if line.startswith("│ ")
    }
    assert list(rows) == ["stdio", "function", "humaneval", "mbpp", "pytest"]
    assert [rows[form][3].strip() for form in rows] == ["3", "3", "1", "1", "1"]  # sandbox runs per item
    assert rows["stdio"][6].strip() == "1.00x"  # the baseline against itself
    assert all(float(row[4]) > 0 and row[6].strip().endswith("x") for row in rows.values())


def test_a_form_whose_correct_solution_fails_is_not_timed(monkeypatch, process_sandbox):
    unit, item = bench.FORM_ITEMS["mbpp"]
    broken = {**item, "test_list": ["assert add(1, 2) == 4"]}
    monkeypatch.setitem(bench.FORM_ITEMS, "mbpp", (unit, broken))
    with pytest.raises(RuntimeError, match="process sandbox, mbpp form: a correct solution scored"):
        bench.measure_item_times(["process"], 1)


def test_an_unavailable_backend_is_a_note_not_a_crash(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/m1-test/docker.sock")
    monkeypatch.setattr("sandboxes._cache", {})
    rows = bench.measure_item_times(["docker"], 1)
    assert list(rows["docker"]) == [""] and "sandbox unavailable" in rows["docker"][""].note
