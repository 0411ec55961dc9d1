"""Chunked (block) lightning attention in torch, forward and backward.

The sequence is cut into chunks of C tokens. Inside a chunk the output is a masked quadratic form
((Q K^T) * decay mask) V; across chunks a [Dk, Dv] state per head carries the past. Every large
operation is one batched matmul over all chunks at once; only the state scan (T/C tiny steps) is a
Python loop. Cost is O(T * C * D + T * D^2): linear in T.

The backward pass is chunked as well. It keeps only q, k, v and the initial state from the forward
pass and recomputes the per-chunk states (one batched matmul and the scan), so the memory held
between forward and backward is O(T * D), and O(T * D + (T/C) * D^2) while the backward runs.

Gradients, with lam = exp(-slope), R_n the gradient flowing into the state at the end of chunk n
(R = dS_final after the last chunk, R_{n-1} = lam^C R_n + (Q_n * q_decay)^T dO_n) and S_{n-1} the
state before chunk n:
    dQ = (dO S_{n-1}^T) * q_decay + ((dO V^T) * M) K
    dK = (V * k_decay) R_n^T       + ((dO V^T) * M)^T Q
    dV = (K * k_decay) R_n         + ((Q K^T) * M)^T dO
    d initial_state = R_{-1}
The decay rates (slope) are fixed buffers in MiniMax and get no gradient.
"""

from __future__ import annotations

import torch

from kernels.lightning._common import check_inputs, chunk_decays, initial, state_dtype


def _chunk_states(
    k: torch.Tensor, v: torch.Tensor, k_decay: torch.Tensor, block: torch.Tensor, s0: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """States before each chunk [B,H,N,Dk,Dv] and the final state, for chunked k, v [B,H,N,C,D]."""
    local = (k * k_decay[:, None]).transpose(-1, -2) @ v  # each chunk's own contribution at its end
    before = torch.empty_like(local)
    state = s0
    for n in range(local.shape[2]):
        before[:, :, n] = state
        state = block * state + local[:, :, n]
    return before, state


class _LightningChunkFn(torch.autograd.Function):
    """One segment whose length is a multiple of the chunk size C (tensors already in the state dtype)."""

    @staticmethod
    def forward(ctx, q, k, v, slope, s0, C: int):  # type: ignore[override]
        B, H, T, Dk = q.shape
        Dv = v.shape[-1]
        N = T // C
        qc, kc, vc = (x.reshape(B, H, N, C, x.shape[-1]) for x in (q, k, v))
        q_decay, k_decay, intra, block = chunk_decays(slope, C, q.dtype)
        before, final = _chunk_states(kc, vc, k_decay, block, s0)
        o = (qc * q_decay[:, None]) @ before + ((qc @ kc.transpose(-1, -2)) * intra[:, None]) @ vc
        ctx.save_for_backward(q, k, v, slope, s0)
        ctx.C = C
        return o.reshape(B, H, T, Dv), final

    @staticmethod
    def backward(ctx, do, dfinal):  # type: ignore[override]
        q, k, v, slope, s0 = ctx.saved_tensors
        C = ctx.C
        B, H, T, Dk = q.shape
        Dv = v.shape[-1]
        N = T // C
        qc, kc, vc = (x.reshape(B, H, N, C, x.shape[-1]) for x in (q, k, v))
        doc = (do if do is not None else torch.zeros_like(v)).reshape(B, H, N, C, Dv)
        q_decay, k_decay, intra, block = chunk_decays(slope, C, q.dtype)
        mask = intra[:, None]

        before, _ = _chunk_states(kc, vc, k_decay, block, s0)
        dov = (doc @ vc.transpose(-1, -2)) * mask
        dq = (doc @ before.transpose(-1, -2)) * q_decay[:, None] + dov @ kc

        # Reverse scan: R_n is the gradient reaching the state at the end of chunk n.
        local = (qc * q_decay[:, None]).transpose(-1, -2) @ doc
        after = torch.empty_like(local)
        r = dfinal if dfinal is not None else torch.zeros_like(s0)
        for n in range(N - 1, -1, -1):
            after[:, :, n] = r
            r = block * r + local[:, :, n]

        qk = (qc @ kc.transpose(-1, -2)) * mask
        dk = (vc * k_decay[:, None]) @ after.transpose(-1, -2) + dov.transpose(-1, -2) @ qc
        dv = (kc * k_decay[:, None]) @ after + qk.transpose(-1, -2) @ doc
        return dq.reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape), None, r, None


def lightning_attn_chunked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lightning attention by chunks, differentiable w.r.t. q, k, v and initial_state.

    Same signature and result as `lightning_attn_naive`. A length that is not a multiple of
    chunk_size is handled as full chunks plus one shorter chunk, never by padding (padding would
    decay the final state).
    """
    check_inputs(q, k, v, slope, initial_state)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    if slope.requires_grad and torch.is_grad_enabled():
        raise ValueError("slope is a fixed decay rate here and gets no gradient; pass slope.detach()")
    dtype = state_dtype(q)
    state = initial(initial_state, q, v)
    T = q.shape[2]
    full = T - T % chunk_size
    outputs = []
    for start, end, C in ((0, full, chunk_size), (full, T, T - full)):
        if end > start:
            o, state = _LightningChunkFn.apply(
                *(x[:, :, start:end].to(dtype) for x in (q, k, v)), slope, state, C
            )
            outputs.append(o)
    if not outputs:
        return v.new_zeros(v.shape).to(q.dtype), state
    return torch.cat(outputs, dim=2).to(q.dtype), state
