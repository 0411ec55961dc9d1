"""The reference: the recurrence itself, one token at a time, differentiated by autograd.

    S_t = exp(-slope) * S_{t-1} + k_t^T v_t        o_t = q_t S_t

Every other implementation is tested against this one. No 1/sqrt(d) scale, as in MiniMax.
"""

from __future__ import annotations

import torch

from kernels.lightning._common import check_inputs, initial, state_dtype


def lightning_attn_naive(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lightning attention by the plain recurrence. Returns (o [B,H,T,Dv] in q's dtype, final state)."""
    check_inputs(q, k, v, slope, initial_state)
    dtype = state_dtype(q)
    decay = torch.exp(-slope.to(dtype))[None, :, None, None]
    state = initial(initial_state, q, v)
    outputs = []
    # unbind once: indexing x[:, :, t] per step would make autograd build a full-size gradient per step
    for q_t, k_t, v_t in zip(*(x.to(dtype).unbind(2) for x in (q, k, v)), strict=True):
        state = decay * state + k_t[..., :, None] * v_t[..., None, :]
        outputs.append(q_t[..., None, :] @ state)  # [B, H, 1, Dv]
    if not outputs:
        return v.new_zeros(v.shape).to(q.dtype), state
    return torch.cat(outputs, dim=2).to(q.dtype), state
