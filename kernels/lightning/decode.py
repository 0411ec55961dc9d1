"""One generation step: fold the new token into the recurrent state and read it out."""

from __future__ import annotations

import torch

from kernels.lightning._common import check_inputs, state_dtype


def lightning_attn_decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k, v: [B, H, 1, D]; state: [B, H, Dk, Dv]. Returns (o [B,H,1,Dv], new state).

    The cost is O(Dk*Dv) per head whatever the context length: this is what makes long
    generations cheap in the lightning layers.
    """
    check_inputs(q, k, v, slope, state)
    if q.shape[2] != 1:
        raise ValueError(f"decode takes one token (T = 1); got T = {q.shape[2]}")
    dtype = state_dtype(q)
    decay = torch.exp(-slope.to(dtype))[None, :, None, None]
    new_state = decay * state.to(dtype) + k[:, :, 0, :, None].to(dtype) * v[:, :, 0, None, :].to(dtype)
    return (q.to(dtype) @ new_state).to(q.dtype), new_state
