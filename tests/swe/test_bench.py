"""`m1 bench swe` at tiny size: docker and the local venv baseline both resolve the gold patches, and
every row carries a ratio."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_bench_swe_prints_ratios_against_a_local_venv(engine_client):
    result = CliRunner().invoke(app, ["bench", "swe", "--tasks", "1", "--runs", "2"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│ ")]
    measures = [row.split("│")[1].strip() for row in rows]
    assert measures == [
        "start `true` (median ms)",
        "s per task, 1 worker(s)",
        "tasks per minute, 1 worker(s)",
        "s per task, 2 worker(s)",
        "tasks per minute, 2 worker(s)",
    ]
    assert all(row.rstrip(" │").endswith("x") for row in rows)
    assert all(
        f"machine load {when}" in result.output
        for when in ("at start", "before measuring", "after measuring")
    )
