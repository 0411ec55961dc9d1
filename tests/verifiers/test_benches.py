"""`m1 bench verify` and `m1 bench rewards` at tiny size: they run, check themselves, print ratios."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app


@pytest.mark.slow
def test_bench_verify_tiny():
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "verify",
            "--prompts",
            "6",
            "--group",
            "3",
            "--workers",
            "2",
            "--batch",
            "8",
            "--sandbox-runs",
            "1",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "verdict agreement: 18/18 items" in result.output
    assert "1.00x" in result.output and "MathVerifier (2 workers)" in result.output
    assert "sandbox overhead per run" in result.output and "process" in result.output


@pytest.mark.slow
def test_bench_rewards_tiny():
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "rewards",
            "--requests",
            "200",
            "--clients",
            "10",
            "--malformed",
            "0.1",
            "--baseline-requests",
            "20",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "zero 5xx PASS, zero lost items PASS, malformed -> 4xx PASS" in result.output
    assert "ratio service / direct" in result.output and "p50 / p99" in result.output
