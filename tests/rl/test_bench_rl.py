from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.bench import app


@pytest.mark.slow
def test_bench_rl_prints_ratios_against_grpo():
    args = [
        "rl",
        "--steps",
        "2",
        "--seeds",
        "1",
        "--updates",
        "2",
        "--group-size",
        "4",
        "--prompts",
        "2",
        "--max-new-tokens",
        "3",
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 5}
    assert set(rows) >= {"grpo", "dapo", "cispo"}
    assert "1.00x" in rows["grpo"]  # the baseline against itself
    assert "x" in rows["cispo"].split("│")[5]
