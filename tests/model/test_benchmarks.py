"""`m1 bench decode` and `m1 bench train-step` at tiny sizes: they run and print their ratios."""

from __future__ import annotations

from typer.testing import CliRunner

from flows.bench.decode_flops import (
    MINIMAX_M1,
    decode_flops,
    deepseek_r1_decode_flops,
    deepseek_r1_generation_flops,
    generation_flops,
)
from flows.cli import app
from flows.errors import InputError
from m1model.config import hybrid_layer_types

SIZES = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_local_experts=2,
             intermediate_size=32, vocab_size=64)  # fmt: skip
TINY = [arg for k, v in SIZES.items() for arg in ("--shape", f"{k}={v}")] + ["--threads", "1"]


def test_decode_bench_prints_times_and_flops_ratios():
    out = CliRunner().invoke(app, ["bench", "decode", "--contexts", "32,64", "--tokens", "2", *TINY])
    assert out.exit_code == 0, out.output
    assert "hybrid / all-softmax" in out.output and "MiniMax-M1" in out.output and "%" in out.output
    assert "DeepSeek-R1" in out.output


def test_decode_flops_follow_the_formula():
    hybrid, full = hybrid_layer_types(80), ["full_attention"] * 80
    # Only softmax layers grow with context: 4 H Dh FLOPs per cached position each.
    grow = decode_flops(MINIMAX_M1, full, 1001) - decode_flops(MINIMAX_M1, full, 1000)
    assert grow == 4 * 64 * 128 * 80
    assert (
        decode_flops(MINIMAX_M1, hybrid, 1001) - decode_flops(MINIMAX_M1, hybrid, 1000) == 4 * 64 * 128 * 10
    )
    ratio_64k = decode_flops(MINIMAX_M1, hybrid, 65536) / decode_flops(MINIMAX_M1, full, 65536)
    ratio_100k = decode_flops(MINIMAX_M1, hybrid, 102400) / decode_flops(MINIMAX_M1, full, 102400)
    assert 0.125 < ratio_100k < ratio_64k < 0.5  # falls towards 1/8 as the context grows
    total = generation_flops(MINIMAX_M1, hybrid, 100)
    assert abs(total - sum(decode_flops(MINIMAX_M1, hybrid, n) for n in range(1, 101))) < 1e-6 * total


def test_deepseek_r1_flops_match_its_active_parameters_and_the_papers_claim():
    # At context 0 a token costs twice the active parameters: R1 publishes 37B.
    assert 2 * 36e9 < deepseek_r1_decode_flops(0) < 2 * 37.5e9
    grow = deepseek_r1_decode_flops(1001) - deepseek_r1_decode_flops(1000)
    assert grow == 61 * 2 * 128 * (192 + 128)  # every layer's heads over one more cached position
    total = deepseek_r1_generation_flops(100)
    assert abs(total - sum(deepseek_r1_decode_flops(n) for n in range(1, 101))) < 1e-6 * total
    m1 = hybrid_layer_types(80)
    ratio_64k = decode_flops(MINIMAX_M1, m1, 65536) / deepseek_r1_decode_flops(65536)
    ratio_100k = decode_flops(MINIMAX_M1, m1, 102400) / deepseek_r1_decode_flops(102400)
    assert ratio_64k < 0.5 and 0.2 < ratio_100k < 0.3  # the paper: under 50% at 64K, about 25% at 100K


def test_train_step_bench_compares_with_transformers():
    out = CliRunner().invoke(
        app,
        ["bench", "train-step", "--seq", "40", "--repeats", "1", "--shape", "num_hidden_layers=2", *TINY],
        env={"M1_BENCH_LOAD_TOLERANCE": "100"},
    )
    assert out.exit_code == 0, out.output
    assert "speed-up vs" in out.output and "m1model" in out.output
    losses = [
        line.split("│")[2].strip()
        for line in out.output.splitlines()
        if "│" in line and ("1.00x" in line or "m1model" in line)
    ]
    assert len(set(losses)) == 1  # same weights, same batch: the same loss
    text = " ".join(out.output.split())  # rich wraps the floor sentence
    assert "weight GEMMs" in text and "no fp32 implementation can be more than" in text
    assert "of its step outside the weight-GEMM floor" in text and "machine load at start" in text
    shares = {
        line.split("│")[1].strip(): float(line.split("│")[3].strip().rstrip("%"))
        for line in out.output.splitlines()
        if line.count("│") == 4 and line.rstrip(" │").endswith("%")
    }
    assert "weight GEMMs (mm, addmm)" in shares and "other" in shares and len(shares) == 6
    assert shares["weight GEMMs (mm, addmm)"] > 0 and shares["lightning attention core (bmm, scan)"] > 0
    assert 98 <= sum(shares.values()) <= 102  # rounded shares of one whole step


def test_bad_shape_is_an_input_error():
    out = CliRunner().invoke(app, ["bench", "decode", "--shape", "hidden=3"])
    assert isinstance(out.exception, InputError) and "unknown field 'hidden'" in str(out.exception)


def test_gemm_floor_records_the_forward_and_backward_products_of_a_step():
    import torch

    from flows.bench.gemm_floor import gemm_floor, record_gemms

    layer = torch.nn.Linear(16, 24, bias=False)
    x = torch.randn(10, 16, requires_grad=True)
    shapes = record_gemms(lambda: layer(x).sum().backward())
    # y = x W^T; dx = dy W; dW = dy^T x
    assert shapes == {(10, 16, 24): 1, (10, 24, 16): 1, (24, 10, 16): 1}
    floor = gemm_floor(shapes + shapes, tries=1)
    assert floor.calls == 6 and floor.flops == 6 * 2 * 10 * 16 * 24 and floor.seconds > 0


def test_sft_bench_compares_micro_batches_with_the_whole_batch():
    args = ["bench", "sft", "--problems", "24", "--logic-per-task", "1", "--steps", "1", "--repeats", "1"]
    out = CliRunner().invoke(app, [*args, "--overheads", "0,256"])
    assert out.exit_code == 0, out.output
    for side in ("whole batch", "overhead 0", "overhead 256"):
        assert side in out.output
    drift = float(out.output.split("over the steps: ")[1].split()[0])
    assert drift < 1e-4  # the same step, however the batch is cut
    bad = CliRunner().invoke(app, [*args, "--overheads", "a,b"])
    assert isinstance(bad.exception, InputError) and "expected comma-separated integers" in str(bad.exception)


def test_engine_bench_compares_continuous_static_and_sequential():
    import pytest

    result = CliRunner().invoke(
        app,
        ["bench", "engine", "--clients", "4", "--requests", "8", "--sequential", "4", "--rounds", "1"]
        + ["--uniform-len", "4"]
        + ["--prompts", "2", "--group-size", "4", "--window", "8"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    out = result.output
    for title in ("heavy-tailed", "uniform", "issue example", "RL rollouts"):
        assert title in out
    for side in ("sequential", "static", "continuous"):
        assert f"│ {side}" in out
    assert "1.00x" in out and "TTFT p50 ms" in out and "short / long" in out
    # the example: under static batching a short request waits for the longest (ratio 1.00)
    static_row = next(
        line for line in out.splitlines() if line.startswith("│ static") and line.count("│") == 5
    )
    assert float(static_row.split("│")[4]) == pytest.approx(1.0, abs=0.01)
