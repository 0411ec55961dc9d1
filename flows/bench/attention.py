"""`m1 bench attention`: chunked lightning attention vs the naive recurrence and causal softmax attention.

Forward + backward at each sequence length (batch 1, 8 heads, head dim 64, fp32, CPU by default),
all three measured in the same run: the naive recurrence (`kernels.lightning_attn_naive`, autograd
through T steps: slow, so measured only up to --naive-max-len), the chunked kernel
(`kernels.lightning_attn_chunked`) and torch's `scaled_dot_product_attention(is_causal=True)`.
Linear attention should grow about 2x per doubling of length, softmax attention towards 4x.

Times are the best of --repeats runs, by default in this process's CPU time on one thread: on a
machine shared with other jobs that stays steady where wall time does not, and on an idle one
the two agree. --clock wall --threads 0 measures wall time with torch's default threads.

Then the fused log-probabilities: `kernels.selective_log_softmax` against the FP32 head
`(hidden.float() @ weight.float().T).log_softmax(-1).gather(...)`, forward + backward, each in a fresh
process whose peak resident memory (Linux VmHWM, reset just before the call) is read afterwards:
the extra memory is what the call made resident beyond its inputs.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_start
from flows.errors import InputError
from flows.progress import bars

CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def time_fwd_bwd(
    step: Callable[[], None], repeats: int, clock: str = "wall", min_total: float = 1.0
) -> float:
    """Best seconds of `step` after one warm-up call, over at least `repeats` runs and, for quick
    steps, more (up to 20) until `min_total` seconds have been measured.

    The best run is the one least disturbed by other processes, the usual choice (as in timeit).
    """
    now = CLOCKS[clock]
    step()
    times: list[float] = []
    while len(times) < repeats or (sum(times) < min_total and len(times) < 20):
        t0 = now()
        step()
        times.append(now() - t0)
    return min(times)


def attention_step(method: str, length: int, heads: int, head_dim: int) -> Callable[[], None]:
    """One forward + backward of `method` on fresh random inputs of the benchmark's shape."""
    # heavy: torch; not at m1 start-up
    import torch
    import torch.nn.functional as F

    import kernels

    g = torch.Generator().manual_seed(length)
    q, k, v = (torch.randn(1, heads, length, head_dim, generator=g).requires_grad_() for _ in range(3))
    grad = torch.randn(1, heads, length, head_dim, generator=g)
    # MiniMax's slopes for 8 heads (first layer); the kernels see only numbers, any positive rates do.
    slope = 1 / 2 ** (8 / heads) ** torch.arange(1, heads + 1)

    def step() -> None:
        if method == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            fn = {"naive": kernels.lightning_attn_naive, "chunked": kernels.lightning_attn_chunked}[method]
            o, _ = fn(q, k, v, slope)
        o.backward(grad)
        for x in (q, k, v):
            x.grad = None

    return step


def growth(times: dict[int, float], length: int) -> float | None:
    """Time growth per doubling of length, from the previous measured length to this one."""
    shorter = [n for n in times if n < length]
    if length not in times or not shorter:
        return None
    prev = max(shorter)
    return (times[length] / times[prev]) ** (1 / math.log2(length / prev))


def logprob_peak(
    method: str, tokens: int, vocab: int, hidden_dim: int, threads: int, clock: str = "wall"
) -> tuple[float, int]:
    """(seconds, peak extra resident bytes) of one forward + backward, run in a fresh process."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_logprob_child, (method, tokens, vocab, hidden_dim, threads, clock))


def _rss_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} missing from /proc/self/status")


def _logprob_child(
    method: str, tokens: int, vocab: int, hidden_dim: int, threads: int, clock: str
) -> tuple[float, int]:
    # heavy: torch; not at m1 start-up
    import torch

    import kernels

    if threads:
        torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(tokens, hidden_dim, generator=g).bfloat16().requires_grad_()
    weight = (torch.randn(vocab, hidden_dim, generator=g) / hidden_dim**0.5).bfloat16().requires_grad_()
    labels = torch.randint(0, vocab, (tokens,), generator=g)

    def run() -> None:
        if method == "fused":
            logp = kernels.selective_log_softmax(hidden, weight, labels)
        else:
            logits = hidden.float() @ weight.float().T  # the FP32 LM head, as the fused kernel computes
            logp = logits.log_softmax(-1).gather(-1, labels[:, None])[:, 0]
        logp.sum().backward()

    before = _rss_bytes("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current resident size
    now = CLOCKS[clock]
    t0 = now()
    run()
    seconds = now() - t0
    return seconds, _rss_bytes("VmHWM") - before


@app.command("attention")
def bench_attention(
    lengths: Annotated[
        str, typer.Option(help="Comma-separated sequence lengths.")
    ] = "1024,2048,4096,8192,16384",
    repeats: Annotated[int, typer.Option(min=1, help="Timed runs per point (best reported).")] = 3,
    naive_max_len: Annotated[
        int, typer.Option(min=0, help="Longest length for the slow naive recurrence.")
    ] = 4096,
    heads: Annotated[int, typer.Option(min=1)] = 8,
    head_dim: Annotated[int, typer.Option(min=1)] = 64,
    threads: Annotated[
        int,
        typer.Option(
            min=0, help="torch CPU threads; 1 gives steady numbers on a shared machine, 0 torch's default."
        ),
    ] = 1,
    clock: Annotated[
        str,
        typer.Option(help="cpu: this process's CPU time (steady on a shared machine; sums threads); wall."),
    ] = "cpu",
    logprob_tokens: Annotated[
        int, typer.Option(min=0, help="Tokens for the log-prob line (0 skips it).")
    ] = 8192,
    logprob_vocab: Annotated[int, typer.Option(min=1)] = 32768,
    logprob_hidden: Annotated[int, typer.Option(min=1, help="Hidden size of the LM head.")] = 128,
) -> None:
    """Lightning attention (naive, chunked) vs causal SDPA fwd+bwd over lengths; fused log-probs memory."""
    # heavy: torch; not at m1 start-up
    import torch

    try:
        sizes = sorted({int(x) for x in lengths.split(",") if x.strip()})
    except ValueError:
        raise InputError(f"--lengths: expected comma-separated integers, got {lengths!r}") from None
    if not sizes or sizes[0] < 1:
        raise InputError(f"--lengths: expected positive integers, got {lengths!r}")
    if clock not in CLOCKS:
        raise InputError(f"--clock: expected one of {', '.join(CLOCKS)}, got {clock!r}")
    if threads:
        torch.set_num_threads(threads)

    console = Console()
    print_start(console)
    meter = LoadMeter()
    console.print(
        f"batch 1, {heads} heads, head dim {head_dim}, fp32, {torch.get_num_threads()} CPU threads; "
        f"forward + backward, {clock} seconds, best of >= {repeats} runs (quick ones repeated for 1 s); naive up to length {naive_max_len}"
    )

    times: dict[str, dict[int, float]] = {"naive": {}, "chunked": {}, "sdpa": {}}
    plan = [(m, n) for n in sizes for m in ("chunked", "sdpa", "naive") if m != "naive" or n <= naive_max_len]
    with bars(console, transient=True) as progress:
        task = progress.add_task("attention", total=len(plan))
        for method, n in plan:
            progress.update(task, description=f"{method} @ {n}")
            with meter.side(method):
                times[method][n] = time_fwd_bwd(attention_step(method, n, heads, head_dim), repeats, clock)
            progress.advance(task)

    table = Table(title=f"lightning attention fwd+bwd ({clock} seconds; SDPA: causal softmax attention)")
    for col in ("length", "naive", "chunked", "SDPA", "naive/\nchunked", "SDPA/\nchunked",
                "growth\nchunked", "growth\nSDPA"):  # fmt: skip
        table.add_column(col, justify="right")

    def cell(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    for n in sizes:
        naive, chunked, sdpa = times["naive"].get(n), times["chunked"][n], times["sdpa"][n]
        table.add_row(
            str(n), cell(naive, ".3f"), cell(chunked, ".3f"), cell(sdpa, ".3f"),
            meter.ratio("naive", "chunked", naive / chunked, "{:.1f}x") if naive else "-",
            meter.ratio("sdpa", "chunked", sdpa / chunked),
            cell(growth(times["chunked"], n), ".2f"), cell(growth(times["sdpa"], n), ".2f"),
        )  # fmt: skip
    console.print(table)
    meter.report(console, "sdpa", "chunked")
    skipped = [n for n in sizes if n > naive_max_len]
    if skipped:
        console.print(f"naive recurrence not run above length {naive_max_len} (--naive-max-len): {skipped}")

    if logprob_tokens:
        console.print(
            f"log-probs of chosen tokens, {logprob_tokens} tokens x {logprob_vocab} vocab, hidden "
            f"{logprob_hidden}, bf16 inputs, FP32 head, forward + backward, each in a fresh process"
        )
        rows = {
            m: logprob_peak(m, logprob_tokens, logprob_vocab, logprob_hidden, threads, clock)
            for m in ("full", "fused")
        }
        lp = Table(title="selective log-softmax")
        for col in ("method", "seconds", "peak extra memory", "memory ratio"):
            lp.add_column(col, justify="right")
        base_mem = rows["full"][1]
        for label, key in (
            ("log_softmax + gather (FP32 logits)", "full"),
            ("kernels.selective_log_softmax", "fused"),
        ):
            secs, mem = rows[key]
            lp.add_row(
                label,
                f"{secs:.2f}",
                f"{mem / 2**20:.0f} MiB",
                f"{base_mem / max(mem, 1):.1f}x less" if key == "fused" else "1.0x",
            )
        console.print(lp)
        console.print(
            f"one FP32 \\[tokens x vocab] matrix is {logprob_tokens * logprob_vocab * 4 / 2**20:.0f} MiB; "
            "peak extra = resident-memory high-water mark during the call minus resident memory before it"
        )
