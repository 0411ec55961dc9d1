"""`m1 bench decode`: time per generated token of the hybrid model vs the same model with every layer softmax.

Measured: one decode step (batch 1) at each context length, for the hybrid model (MiniMax's pattern, one
softmax layer after every seven lightning layers) and for the same-size model whose layers are all softmax
attention. The cache is filled with random keys/values/states of the context length rather than by a
prefill: a decode step's cost depends on the cache's size, not its contents, and an all-softmax prefill
of 16K tokens would dominate the run.

Analytic FLOPs per generated token (formulas in flows/bench/decode_flops.py) at 64K and 100K: the hybrid
against the same model with full attention everywhere, for the benchmark model and MiniMax-M1's own
configuration, and MiniMax-M1 against DeepSeek-R1, the comparison behind the paper's claim (under 50% of
the FLOPs at 64K generation length, about 25% at 100K).
"""

from __future__ import annotations

import statistics
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.decode_flops import (
    MINIMAX_M1,
    decode_flops,
    deepseek_r1_decode_flops,
    deepseek_r1_generation_flops,
    generation_flops,
)
from flows.bench.load import LoadMeter, print_start
from flows.bench.model_shape import ShapeOption, ThreadsOption, parse_shape
from flows.errors import InputError


def _random_cache(model, context: int, reserve: int):
    """A cache as if `context` tokens had been prefilled: random states and keys/values of that size."""
    # heavy: torch; not at m1 start-up
    import torch

    from m1model.cache import KVBuffer, M1Cache

    cfg = model.config
    D, g = cfg.attn_head_dim, torch.Generator().manual_seed(context)
    cache = M1Cache(reserve=reserve)
    for i, layer in enumerate(model.model.layers):
        if layer.is_lightning:
            cache.states[i] = torch.randn(1, cfg.num_attention_heads, D, D, generator=g)
        else:
            kv = [torch.randn(1, cfg.num_key_value_heads, context, D, generator=g) for _ in range(2)]
            cache.kv[i] = KVBuffer.start(*kv, reserve=reserve)
    cache.mask = torch.ones(1, context, dtype=torch.bool)
    cache.positions = torch.tensor([context])
    return cache


def seconds_per_token(model, context: int, tokens: int) -> float:
    """Median wall time of one decode step at the given context (after one warm-up step)."""
    # heavy: torch; not at m1 start-up
    import torch

    cache = _random_cache(model, context, reserve=tokens + 1)
    token = torch.tensor([[5]])
    times = []
    with torch.inference_mode():
        model(token, cache=cache, use_cache=True)
        for _ in range(tokens):
            t0 = time.perf_counter()
            logits = model(token, cache=cache, use_cache=True).logits
            token = logits[:, -1].argmax(-1, keepdim=True)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


@app.command("decode")
def bench_decode(
    contexts: Annotated[str, typer.Option(help="Comma-separated context lengths.")] = "1024,4096,16384",
    tokens: Annotated[int, typer.Option(min=1, help="Decode steps timed per context (median reported).")] = 8,
    shape: ShapeOption = None,
    threads: ThreadsOption = None,
) -> None:
    """Per-token decode time of the hybrid model vs all-softmax attention, plus analytic FLOPs at 64K/100K."""
    # heavy: torch, transformers; not at m1 start-up
    import torch

    from m1model.config import hybrid_layer_types
    from m1model.policy import build_model

    if threads:
        torch.set_num_threads(threads)
    try:
        lengths = [int(c) for c in contexts.split(",")]
    except ValueError:
        raise InputError(f"--contexts {contexts!r}: expected comma-separated integers") from None
    shape = parse_shape(shape)
    layers = shape["num_hidden_layers"]
    kinds = {"hybrid": hybrid_layer_types(layers), "all-softmax": ["full_attention"] * layers}
    try:
        models = {}
        for name, types in kinds.items():
            models[name] = build_model(**shape, layer_types=types).eval()
    except ValueError as exc:
        raise InputError(f"model shape: {exc}") from None

    console = Console()
    print_start(console)
    meter = LoadMeter()
    table = Table(
        title=f"decode, batch 1, {layers} layers (hybrid: {kinds['hybrid'].count('full_attention')} softmax)"
    )
    for col in ("context", "hybrid ms/token", "all-softmax ms/token", "hybrid / all-softmax"):
        table.add_column(col, justify="right")
    for n in lengths:
        with console.status(f"decoding at context {n}"):
            t = {}
            for name, m in models.items():
                with meter.side(name):
                    t[name] = seconds_per_token(m, n, tokens)
        table.add_row(
            f"{n:,}",
            f"{t['hybrid'] * 1e3:.2f}",
            f"{t['all-softmax'] * 1e3:.2f}",
            meter.ratio("all-softmax", "hybrid", t["hybrid"] / t["all-softmax"], "{:.2f}"),
        )
    console.print(table)
    meter.report(console, "all-softmax", "hybrid")

    flops = Table(title="analytic FLOPs: hybrid / all-softmax (formulas in flows/bench/decode_flops.py)")
    for col in (
        "model",
        "context",
        "hybrid GFLOP/token",
        "softmax GFLOP/token",
        "ratio per token",
        "ratio, whole generation",
    ):
        flops.add_column(col, justify="right")
    for label, cfg in (("this benchmark", shape), ("MiniMax-M1", MINIMAX_M1)):
        n_layers = cfg["num_hidden_layers"]
        hybrid, full = hybrid_layer_types(n_layers), ["full_attention"] * n_layers
        for n in (65_536, 102_400):
            h, f = decode_flops(cfg, hybrid, n), decode_flops(cfg, full, n)
            whole = generation_flops(cfg, hybrid, n) / generation_flops(cfg, full, n)
            flops.add_row(
                label, f"{n // 1024}K", f"{h / 1e9:.3f}", f"{f / 1e9:.3f}", f"{h / f:.1%}", f"{whole:.1%}"
            )
    console.print(flops)

    paper = Table(
        title="analytic FLOPs: MiniMax-M1 / DeepSeek-R1 (the paper: < 50% at 64K, about 25% at 100K)"
    )
    for col in ("context", "M1 GFLOP/token", "R1 GFLOP/token", "ratio per token", "ratio, whole generation"):
        paper.add_column(col, justify="right")
    m1_types = hybrid_layer_types(MINIMAX_M1["num_hidden_layers"])
    for n in (65_536, 102_400):
        m1, r1 = decode_flops(MINIMAX_M1, m1_types, n), deepseek_r1_decode_flops(n)
        whole = generation_flops(MINIMAX_M1, m1_types, n) / deepseek_r1_generation_flops(n)
        paper.add_row(f"{n // 1024}K", f"{m1 / 1e9:.1f}", f"{r1 / 1e9:.1f}", f"{m1 / r1:.1%}", f"{whole:.1%}")
    console.print(paper)
