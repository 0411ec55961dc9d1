"""`m1 bench attention` at a tiny size: the tables print with their ratios and growth factors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.errors import InputError


@pytest.mark.slow  # two fresh processes import torch for the memory measurement
def test_bench_attention_prints_ratio_tables():
    args = ["bench", "attention", "--lengths", "64,128", "--repeats", "1", "--naive-max-len", "64"]
    args += ["--heads", "2", "--head-dim", "16", "--logprob-tokens", "64", "--logprob-vocab", "256"]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "lightning attention fwd+bwd" in out and "selective log-softmax" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert "x" in rows["64"].split("│")[5]  # naive/chunked ratio where naive ran
    assert rows["128"].split("│")[2].strip() == "-"  # naive skipped above --naive-max-len
    assert rows["128"].split("│")[7].strip() != "-"  # growth per doubling
    assert "naive recurrence not run above length 64" in out
    assert "less" in rows["kernels.selective_log_softmax"]


def test_bench_attention_rejects_bad_lengths():
    result = CliRunner().invoke(app, ["bench", "attention", "--lengths", "1k,2k"])
    assert isinstance(result.exception, InputError)  # `m1` prints it as one line, exit 2
