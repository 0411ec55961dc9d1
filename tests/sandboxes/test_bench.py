"""`m1 bench sandbox` at tiny size: it runs every backend asked for and prints ratios to the baseline."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.errors import InputError


@pytest.mark.parametrize("backend", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_bench_sandbox_prints_ratios(backend):
    result = CliRunner().invoke(
        app, ["bench", "sandbox", "--runs", "2", "--backends", backend, "--items", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "x subprocess" in result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│ ")]
    assert [row.split("│")[1].strip() for row in rows] == ["subprocess", backend]
    assert all(row.rstrip(" │").endswith("x") for row in rows)  # a ratio, not "unavailable"


def test_bench_sandbox_rejects_unknown_backend():
    result = CliRunner().invoke(app, ["bench", "sandbox", "--backends", "vm"])
    assert isinstance(result.exception, InputError)  # the CLI prints it as one line, exit 2
    assert "unknown sandbox backend" in str(result.exception)
