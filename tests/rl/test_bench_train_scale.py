"""`m1 bench train-scale`: one process against two under torchrun (gloo), on the same global batch."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from flows.bench import app


@pytest.mark.slow
def test_bench_train_scale_prints_both_runs_with_their_communication_share():
    args = ["train-scale", "--steps", "1", "--prompts", "4", "--group", "2", "--new-tokens", "3"]
    args += ["--prompt-len", "4", "--shape", "hidden_size=32", "--shape", "num_hidden_layers=2"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 5}
    assert set(rows) == {"1", "2"}
    assert "1.00x" in rows["1"] and "gloo" in result.output
    assert "machine load at start" in result.output and "other processes' load per side" in result.output
    share = re.search(r"\((\d+)%\)", rows["2"])  # rank 0's time in collectives, as a share of its step
    assert share is not None and 0 < int(share.group(1)) < 100
