"""`m1 bench train-step`: one forward + backward of the RL loss, m1model vs transformers' MiniMaxForCausalLM.

Both models hold the same weights (ours is saved as an HF checkpoint and transformers loads it), see the
same batch, and compute the same quantity: the mean next-token log-likelihood, ours through
`token_logprobs` (chunked lightning kernel with its hand-written backward, fused FP32 log-softmax that
never materialises [tokens x vocab] in FP32), transformers' through its block lightning attention,
`grouped_mm` experts and full-logits cross-entropy. The two losses are printed so the timing is of
equal work. Medians over --repeats after one warm-up step; the two models and the GEMM floor (below) run
in turn within each repeat, so all three see the same machine load.

The headline is the share of m1model's step spent outside that floor (target: at most 15%), with the
ratio to transformers beside it.

Why the ratio stays small, measured in the same run: nearly all of the step's FLOPs are the dense weight
GEMMs (q/k/v/gate/out projections, the routed experts, the LM head; 422 GFLOP at the default shape, against
13 GFLOP in our attention core's batched products), which every exact implementation must perform, ours
and transformers' alike; the lightning-attention core is the rest (ours: chunks of 64, transformers:
blocks of 256, 4x the intra-block work). The bench counts those GEMM FLOPs as our step
dispatches them and times the same GEMM shapes alone on this machine, which gives a floor no fp32
implementation can beat, and so the largest speed-up over transformers that is possible here. At the
default shape the floor sits near 60% of transformers' step: the 3x target of the issue is out of reach on
CPU in fp32 (this CPU has no bf16 units); the ratio grows only with the attention share of the FLOPs, not
with length, since both lightning implementations are linear in the sequence length.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.gemm_floor import gemm_floor, record_gemms
from flows.bench.load import LoadMeter, print_allocator, print_start
from flows.bench.model_shape import ShapeOption, ThreadsOption, parse_shape
from flows.bench.step_breakdown import step_breakdown
from flows.errors import InputError


def interleaved_medians(
    steps: dict[str, Callable[[], float]], repeats: int, meter
) -> dict[str, tuple[float, float]]:
    """name -> (median seconds, loss): one warm-up call each, then `repeats` rounds in which every step
    runs once, in turn, so all of them see the same machine load."""
    losses = {name: step() for name, step in steps.items()}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            with meter.side(name):
                t0 = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - t0)
    return {name: (statistics.median(times[name]), losses[name]) for name in steps}


THEIRS, OURS, FLOOR = "transformers MiniMaxForCausalLM", "m1model", "GEMM floor"


@app.command("train-step")
def bench_train_step(
    seq: Annotated[int, typer.Option(min=2, help="Sequence length.")] = 2048,
    batch: Annotated[int, typer.Option(min=1)] = 1,
    repeats: Annotated[
        int, typer.Option(min=1, help="Timed steps per implementation (median reported).")
    ] = 3,
    shape: ShapeOption = None,
    threads: ThreadsOption = None,
) -> None:
    """Forward + backward at --seq: m1model (chunked kernel, fused log-probs) vs transformers, same weights."""
    # heavy: torch, transformers; not at m1 start-up
    import torch
    from transformers import MiniMaxForCausalLM

    from m1model.policy import build_model

    if threads:
        torch.set_num_threads(threads)
    dims = parse_shape(shape)
    try:
        ours = build_model(**dims).train()
    except ValueError as exc:
        raise InputError(f"model shape: {exc}") from None
    with tempfile.TemporaryDirectory() as folder:
        ours.save_pretrained(folder)
        theirs = MiniMaxForCausalLM.from_pretrained(folder).train()
    ids = torch.randint(3, dims["vocab_size"], (batch, seq), generator=torch.Generator().manual_seed(1))

    def ours_step() -> float:
        loss = -ours.token_logprobs(ids).mean()
        loss.backward()
        ours.zero_grad(set_to_none=True)
        return loss.item()

    def theirs_step() -> float:
        loss = theirs(ids, labels=ids).loss
        loss.backward()
        theirs.zero_grad(set_to_none=True)
        return loss.item()

    console = Console()
    print_start(console)
    meter = LoadMeter()
    shapes = record_gemms(ours_step)

    def floor_step() -> float:
        floor_runs.append(gemm_floor(shapes, tries=1).seconds)
        return 0.0

    floor_runs: list[float] = []
    with console.status(
        f"forward + backward at seq {seq}: transformers, m1model and the GEMM floor, interleaved"
    ):
        results = interleaved_medians(
            {THEIRS: theirs_step, OURS: ours_step, FLOOR: floor_step}, repeats, meter
        )
    base = results[THEIRS][0]
    n_params = sum(p.numel() for p in ours.parameters())
    table = Table(
        title=f"train step (fwd+bwd), batch {batch} x seq {seq}, {n_params / 1e6:.1f}M params, "
        f"{torch.get_num_threads()} threads"
    )
    for col in ("implementation", "loss", "s / step", "tokens / s", "speed-up vs transformers"):
        table.add_column(col, justify="right")
    for name in (THEIRS, OURS):
        seconds, loss = results[name]
        table.add_row(
            name,
            f"{loss:.5f}",
            f"{seconds:.3f}",
            f"{batch * seq / seconds:,.0f}",
            meter.ratio(THEIRS, name, base / seconds),
        )
    console.print(table)
    print_allocator(console, "both implementations")

    floor = statistics.median(floor_runs[1:] or floor_runs)  # the first call was the warm-up
    flops = sum(2.0 * m * k * n * c for (m, k, n), c in shapes.items())
    ours_s = results[OURS][0]
    outside = 1 - floor / ours_s
    against = Table(title="m1model's step against the weight-GEMM floor")
    for col in ("part", "s / step", "share of m1model's step", "speed-up vs transformers"):
        against.add_column(col, justify="left" if col == "part" else "right")
    against.add_row("weight-GEMM floor", f"{floor:.3f}", f"{floor / ours_s:.1%}", f"{base / floor:.2f}x")
    against.add_row("outside the floor", f"{ours_s - floor:.3f}", f"{outside:.1%}", "-")
    console.print(against)
    console.print(
        f"[bold]m1model spends {outside:.0%} of its step outside the weight-GEMM floor[/] (target <= 15%): its "
        f"weight GEMMs (projections, experts, LM head; {sum(shapes.values())} calls, {flops / 1e9:,.1f} GFLOP), "
        f"which every exact implementation performs, take {floor:.3f} s alone on this machine "
        f"({flops / floor / 1e9:,.1f} GFLOP/s) of its {ours_s:.3f} s; the rest ({ours_s - floor:.3f} s) is "
        f"the attention cores, expert routing, norms, activations and the log-softmax. "
        f"The floor is {floor / base:.0%} of transformers' step, so no fp32 implementation can be more than "
        f"{base / floor:.2f}x faster than it here; m1model is at {meter.ratio(THEIRS, OURS, base / ours_s)}.",
        highlight=False,
    )
    if reason := meter.refusal(FLOOR, OURS):
        console.print(f"[bold yellow]outside-floor share measured under different load:[/] {reason}")
    with console.status("one more m1model step under torch's profiler"):
        kinds = step_breakdown(ours_step)
    profiled = sum(kinds.values())
    where = Table(title=f"where m1model's step goes (self CPU time of one profiled step, {profiled:.3f} s)")
    for col in ("operators", "seconds", "share"):
        where.add_column(col, justify="left" if col == "operators" else "right")
    for kind, seconds in kinds.items():
        where.add_row(kind, f"{seconds:.3f}", f"{seconds / profiled:.0%}")
    console.print(where)
    meter.report(console, THEIRS, OURS)
