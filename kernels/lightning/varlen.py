"""Rows of different lengths in one call: what a generation engine's prefill chunks need.

An engine step prefills several requests at once, each a chunk of its own length continuing its own
state. The rows are right-padded to the longest; the outputs at each row's real positions are exact
whatever the padding holds (causality: a real token never sees a later position), but the final state
of a padded row would have decayed over its pads. The state after each row's own last token is the
closed form of the recurrence at t = length (every exponent non-negative, so nothing overflows):

    S_len = lam^len * S_0 + sum_{s < len} lam^(len - 1 - s) * k_s^T v_s

one weighted [Dk, T] x [T, Dv] product per row and head, O(T * Dk * Dv) like one pass of the chunked
kernel. Rows that fill the whole width keep the kernel's own final state.
"""

from __future__ import annotations

import torch

from kernels.lightning._common import state_dtype


def lightning_attn_varlen(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    lengths: torch.Tensor,
    initial_state: torch.Tensor | None = None,
    impl: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k: [B, H, T, Dk]; v: [B, H, T, Dv], row b real at positions < lengths[b] (1 <= lengths <= T).

    Returns (o [B, H, T, Dv], state [B, H, Dk, Dv] after each row's last real token). o at a row's
    padded positions is unspecified. Same conventions as `lightning_attention` otherwise."""
    from kernels.lightning import lightning_attention  # the dispatcher lives in the package's __init__

    o, final = lightning_attention(q, k, v, slope, initial_state=initial_state, impl=impl)
    B, H, T, _ = q.shape
    lengths = lengths.to(device=q.device, dtype=torch.long)
    if lengths.shape != (B,) or bool((lengths < 1).any()) or bool((lengths > T).any()):
        raise ValueError(f"lengths must be [B] = [{B}] with 1 <= length <= T = {T}")
    short = (lengths < T).nonzero().flatten()
    if short.numel() == 0:
        return o, final
    dtype = state_dtype(q)
    rate = slope.to(device=q.device, dtype=dtype)[None, :, None]  # [1, H, 1]
    n = lengths[short]
    t = torch.arange(T, device=q.device)
    age = (n[:, None] - 1 - t).clamp(min=0)  # [b, T]: tokens since position t, at the row's end
    weight = torch.exp(-rate * age[:, None, :].to(dtype)) * (t < n[:, None])[:, None, :]  # [b, H, T]
    ks, vs = k[short].to(dtype), v[short].to(dtype)
    state = (ks * weight[..., None]).transpose(-1, -2) @ vs
    if initial_state is not None:
        decay = torch.exp(-rate * n[:, None, None].to(dtype))[..., None]  # lam^len, [b, H, 1, 1]
        state = state + decay * initial_state[short].to(dtype)
    final = final.clone()
    final[short] = state
    return o, final
