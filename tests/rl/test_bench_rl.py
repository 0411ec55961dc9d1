from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.bench import app


@pytest.mark.slow
def test_bench_rl_times_both_trainers_in_phases_against_trl():
    pytest.importorskip("trl")
    args = [
        "rl",
        "--batches",
        "1",
        "--rounds",
        "1",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "3",
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250", "M1_BENCH_LOAD_TOLERANCE": "100"})
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): line.split("│")
        for line in result.output.splitlines()
        if line.count("│") > 6
    }
    assert set(rows) == {"TRL GRPOTrainer", "m1model RLTrainer"}
    assert rows["TRL GRPOTrainer"][7].strip() == "1.00x"  # the baseline against itself, same run
    assert rows["m1model RLTrainer"][7].strip().endswith("x")
    assert rows["m1model RLTrainer"][3].strip().startswith("0.000")  # pi_old comes with the sampled tokens
    assert "machine load at start" in result.output


def test_bench_rl_rejects_uneven_minibatches():
    result = CliRunner().invoke(app, ["rl", "--prompts", "3", "--group-size", "2", "--updates", "4"])
    assert result.exit_code != 0 and "must divide" in str(result.exception)
