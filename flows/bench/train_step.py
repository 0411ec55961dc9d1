"""`m1 bench train-step`: one forward + backward of the RL loss, m1model vs transformers' MiniMaxForCausalLM.

Both models hold the same weights (ours is saved as an HF checkpoint and transformers loads it), see the
same batch, and compute the same quantity: the mean next-token log-likelihood, ours through
`token_logprobs` (chunked lightning kernel with its hand-written backward, fused FP32 log-softmax that
never materialises [tokens x vocab] in FP32), transformers' through its block lightning attention,
`grouped_mm` experts and full-logits cross-entropy. The two losses are printed so the timing is of
equal work. Medians over --repeats after one warm-up step.

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

from flows.bench import app
from flows.bench.gemm_floor import gemm_floor, record_gemms
from flows.bench.model_shape import ShapeOption, ThreadsOption, parse_shape


def median_seconds(step: Callable[[], float], repeats: int) -> tuple[float, float]:
    """(median seconds, loss) of `step` after one warm-up call."""
    loss = step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), loss


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
    import torch
    from rich.console import Console
    from rich.table import Table
    from transformers import MiniMaxForCausalLM

    from flows.errors import InputError
    from m1model import M1Config, M1ForCausalLM
    from m1model.config import hybrid_layer_types

    if threads:
        torch.set_num_threads(threads)
    dims = parse_shape(shape)
    torch.manual_seed(0)
    try:
        config = M1Config(**dims, layer_types=hybrid_layer_types(dims["num_hidden_layers"]))
    except ValueError as exc:
        raise InputError(f"model shape: {exc}") from None
    ours = M1ForCausalLM(config).train()
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
    results = {}
    for name, step in (("transformers MiniMaxForCausalLM", theirs_step), ("m1model", ours_step)):
        with console.status(f"{name}: forward + backward at seq {seq}"):
            results[name] = median_seconds(step, repeats)
    base = results["transformers MiniMaxForCausalLM"][0]
    n_params = sum(p.numel() for p in ours.parameters())
    table = Table(
        title=f"train step (fwd+bwd), batch {batch} x seq {seq}, {n_params / 1e6:.1f}M params, "
        f"{torch.get_num_threads()} threads"
    )
    for col in ("implementation", "loss", "s / step", "tokens / s", "speed-up vs transformers"):
        table.add_column(col, justify="right")
    for name, (seconds, loss) in results.items():
        table.add_row(
            name, f"{loss:.5f}", f"{seconds:.3f}", f"{batch * seq / seconds:,.0f}", f"{base / seconds:.2f}x"
        )
    console.print(table)

    with console.status("timing the step's weight GEMMs alone"):
        floor = gemm_floor(record_gemms(ours_step))
    ours_s = results["m1model"][0]
    console.print(
        f"The step's weight GEMMs (projections, experts, LM head; {floor.calls} calls, "
        f"{floor.flops / 1e9:,.1f} GFLOP), which every exact implementation performs, take "
        f"[bold]{floor.seconds:.3f} s[/] alone on this machine ({floor.gflops_per_s:,.1f} GFLOP/s). "
        f"That floor is {floor.seconds / base:.0%} of transformers' step, so no fp32 implementation can be "
        f"more than [bold]{base / floor.seconds:.2f}x[/] faster than it here; m1model is at "
        f"{base / ours_s:.2f}x, with {ours_s - floor.seconds:.3f} s of its step outside those GEMMs."
    )
