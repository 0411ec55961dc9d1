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
    for t in range(q.shape[2]):
        kv = k[:, :, t, :, None].to(dtype) * v[:, :, t, None, :].to(dtype)
        state = decay * state + kv
        outputs.append(torch.einsum("bhk,bhkv->bhv", q[:, :, t].to(dtype), state))
    if not outputs:
        return v.new_zeros(v.shape).to(q.dtype), state
    return torch.stack(outputs, dim=2).to(q.dtype), state
