"""Input checks and decay tables shared by every lightning-attention implementation."""

from __future__ import annotations

import torch


def state_dtype(q: torch.Tensor) -> torch.dtype:
    """The recurrent state is float32 (float64 stays float64 so gradcheck can run)."""
    return torch.promote_types(q.dtype, torch.float32)


def check_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    state: torch.Tensor | None,
) -> None:
    """Raise ValueError with the offending shape instead of failing deep inside a matmul."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            f"q, k, v must be [B, H, T, D]; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape; got {tuple(q.shape)} and {tuple(k.shape)}")
    if v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"v must be [B, H, T, Dv] with q's B, H, T; got q {tuple(q.shape)}, v {tuple(v.shape)}"
        )
    B, H, _, Dk = q.shape
    Dv = v.shape[-1]
    if slope.shape != (H,):
        raise ValueError(f"slope must be [H] = [{H}]; got {tuple(slope.shape)}")
    if state is not None and state.shape != (B, H, Dk, Dv):
        raise ValueError(f"state must be [B, H, Dk, Dv] = {[B, H, Dk, Dv]}; got {tuple(state.shape)}")


def initial(state: torch.Tensor | None, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The state to start from, in the state dtype (zeros when None)."""
    B, H, _, Dk = q.shape
    dtype = state_dtype(q)
    if state is None:
        return torch.zeros(B, H, Dk, v.shape[-1], dtype=dtype, device=q.device)
    return state.to(dtype)


def chunk_decays(
    slope: torch.Tensor, C: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decay factors inside a chunk of C steps, as in MiniMax's block prefill.

    Returns, per head h with lam = exp(-slope[h]) and positions i, j in 0..C-1, shaped to broadcast
    against chunked tensors [B, H, N, C, D] and states [B, H, Dk, Dv]:
      q_decay [H, 1, C, 1]  lam^(i+1): how much the state from before the chunk has decayed at step i;
      k_decay [H, 1, C, 1]  lam^(C-1-j): how much token j's contribution has decayed at the chunk end;
      intra   [H, 1, C, C]  lam^(i-j) for j <= i, else 0 (the current token enters with factor 1);
      block   [H, 1, 1]     lam^C: decay of the state across a whole chunk.
    Every exponent is non-negative, so nothing overflows however long the chunk.
    """
    s = slope.to(dtype)[:, None, None]
    i = torch.arange(C, dtype=dtype, device=slope.device)
    q_decay = torch.exp(-s * (i + 1)[:, None])
    k_decay = torch.exp(-s * (C - 1 - i)[:, None])
    diff = i[:, None] - i[None, :]
    intra = torch.where(
        diff >= 0, torch.exp(-s * diff.clamp(min=0)), torch.zeros((), dtype=dtype, device=s.device)
    )
    block = torch.exp(-s * C)
    return q_decay[:, None], k_decay[:, None], intra[:, None], block
