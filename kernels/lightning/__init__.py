"""Lightning attention: linear attention with a per-head exponential decay (MiniMax-Text-01 / M1)."""

from __future__ import annotations

import torch

from kernels.lightning.chunked import lightning_attn_chunked
from kernels.lightning.decode import lightning_attn_decode
from kernels.lightning.naive import lightning_attn_naive
from kernels.lightning.varlen import lightning_attn_varlen

__all__ = [
    "lightning_attention",
    "lightning_attn_chunked",
    "lightning_attn_decode",
    "lightning_attn_naive",
    "lightning_attn_triton",
    "lightning_attn_varlen",
]


def lightning_attn_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Triton forward/backward kernels (CUDA; CPU tensors run in Triton's interpreter).

    Imported on first call so that `import kernels` works where triton is not installed.
    """
    from kernels.lightning.triton_kernels import lightning_attn_triton as impl

    return impl(q, k, v, slope, initial_state)


def lightning_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    initial_state: torch.Tensor | None = None,
    impl: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch to one implementation: "naive", "chunked", "triton" or "auto" (triton on CUDA, else chunked)."""
    if impl == "auto":
        impl = "triton" if q.is_cuda else "chunked"
    if impl == "naive":
        return lightning_attn_naive(q, k, v, slope, initial_state)
    if impl == "chunked":
        return lightning_attn_chunked(q, k, v, slope, initial_state)
    if impl == "triton":
        return lightning_attn_triton(q, k, v, slope, initial_state)
    raise ValueError(f"impl must be one of auto, naive, chunked, triton; got {impl!r}")
