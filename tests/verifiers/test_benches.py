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
        env={"COLUMNS": "250", "M1_BENCH_LOAD_TOLERANCE": "100"},
    )
    assert result.exit_code == 0, result.output
    assert "machine load at start" in result.output
    assert "math-verify + verdict cache + pool (2 workers): 18/18 items" in result.output
    assert "MathVerifier: + fast paths (2 workers): 18/18 items" in result.output
    assert "duplication:" in result.output and "repeat a (reference, answer) pair" in result.output
    rows = {line.split("│")[1].strip(): line.split("│") for line in result.output.splitlines() if "│" in line}
    assert rows["math-verify per item (baseline)"][4].strip() == "1.00x"  # the baseline against itself
    assert rows["MathVerifier: + fast paths (2 workers)"][5].strip().endswith("x")  # vs cache + pool
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
        env={"COLUMNS": "200", "M1_BENCH_LOAD_TOLERANCE": "100"},
    )
    assert result.exit_code == 0, result.output
    assert "zero 5xx PASS, zero lost items PASS, malformed -> 4xx PASS" in result.output
    assert "ratio service / direct" in result.output and "p50 / p99" in result.output
    assert "machine load at start" in result.output and "other processes' load per side" in result.output
    ratio = next(line for line in result.output.splitlines() if "ratio service / direct" in line)
    assert ratio.split("│")[2].strip().endswith("x")  # measured against the direct baseline of this run
