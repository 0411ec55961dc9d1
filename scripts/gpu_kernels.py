"""Lightning attention on CUDA: this project's Triton kernels against flash-linear-attention's, T = 8K-32K.

Run by scripts/gpu-check.sh on a GPU machine; prints a markdown table (and writes it to the path given as
the first argument) to be recorded in flows/bench/GPU_RESULTS.md. Forward, and forward + backward, of
batch 1, 8 heads, head dim 64 (and MiniMax's 128), fp32 and bf16 inputs, best of 5 after a warm-up:

- ``kernels.lightning_attn_triton`` (what `kernels.lightning_attention` picks on CUDA);
- ``kernels.lightning_attn_chunked`` on the same GPU (the torch path, for scale);
- flash-linear-attention's ``chunk_simple_gla`` with ``g_gamma = -slope`` and ``scale = 1``, which is
  lightning attention (FLA's own ``chunk_lightning_attn`` is the same call with its own slopes), when
  ``fla`` imports (carry its wheel: see scripts/gpu-check.sh).

Each FLA output is checked against ours before it is timed, so a layout mistake cannot pass as a speed.
"""

from __future__ import annotations

import sys

import torch

import kernels


def best_ms(fn, repeats: int = 5) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return min(times)


def point(T: int, D: int, dtype: torch.dtype, chunk_simple_gla, g: torch.Generator) -> list[str]:
    """Table rows (fwd, fwd+bwd) at one length, head dim and dtype."""
    q, k, v = (
        (torch.randn(1, 8, T, D, device="cuda", generator=g) * 0.1).to(dtype).requires_grad_()
        for _ in range(3)
    )
    slope = torch.rand(8, device="cuda", generator=g) * 0.5 + 0.01

    def ours(impl: str, backward: bool) -> None:
        o, _ = getattr(kernels, f"lightning_attn_{impl}")(q, k, v, slope)
        if backward:
            o.float().sum().backward()

    def fla(backward: bool) -> None:  # FLA takes [B, T, H, D]; g_gamma is the per-head log decay
        o, _ = chunk_simple_gla(*(x.transpose(1, 2) for x in (q, k, v)), g_gamma=-slope, scale=1.0)
        if backward:
            o.float().sum().backward()

    if chunk_simple_gla is not None:
        with torch.no_grad():
            mine = kernels.lightning_attn_triton(q, k, v, slope)[0].float()
            theirs = chunk_simple_gla(*(x.transpose(1, 2) for x in (q, k, v)), g_gamma=-slope, scale=1.0)[0]
        err = ((mine - theirs.transpose(1, 2).float()).norm() / mine.norm()).item()
        assert err < (1e-3 if dtype == torch.float32 else 3e-2), f"FLA disagrees with ours: {err}"
    rows = []
    for backward in (False, True):
        t = best_ms(lambda b=backward: ours("triton", b))
        c = best_ms(lambda b=backward: ours("chunked", b)) if T <= 16384 else float("nan")
        f = best_ms(lambda b=backward: fla(b)) if chunk_simple_gla is not None else float("nan")
        name, dt = "fwd+bwd" if backward else "fwd", str(dtype).removeprefix("torch.")
        rows.append(f"| {T} | {D} | {dt} | {name} | {t:.2f} | {c:.2f} | {f:.2f} | {t / f:.2f} |")
        print(rows[-1], flush=True)
    return rows


def main(out: str | None) -> None:
    try:
        from fla.ops.simple_gla import chunk_simple_gla
    except ImportError as exc:
        chunk_simple_gla = None
        print(f"flash-linear-attention not importable ({exc}): its columns are left out")
    rows = [
        "| T | head dim | dtype | pass | triton ms | chunked torch ms | FLA simple-GLA ms | triton / FLA |"
    ]
    rows.append("|---|---|---|---|---|---|---|---|")
    g = torch.Generator(device="cuda").manual_seed(0)
    for D in (64, 128):
        for dtype in (torch.float32, torch.bfloat16):
            for T in (8192, 16384, 32768):
                rows += point(T, D, dtype, chunk_simple_gla, g)
    device = f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    table = "\n".join([f"Lightning attention on {device} (batch 1, 8 heads; best of 5):", "", *rows]) + "\n"
    print(table)
    if out:
        with open(out, "w") as fh:
            fh.write(table)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
