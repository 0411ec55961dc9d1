"""Chunked (block) lightning attention in torch, forward and backward.

The sequence is cut into chunks of C tokens. Inside a chunk the output is a masked quadratic form
((Q K^T) * decay mask) V; across chunks a [Dk, Dv] state per head carries the past. Chunks are
processed a segment (many chunks, sized so temporaries stay in cache) at a time, each large
operation one batched matmul over the segment's chunks; only the state scan (one tiny step per
chunk) is a Python loop. Cost is O(T * C * D + T * D^2): linear in T.

The backward pass is chunked as well. It keeps only q, k, v and the state at each segment start
from the forward pass (O(T * D + (T / segment) * D^2) held between forward and backward) and,
walking the segments backwards, recomputes each segment's chunk states. Peak memory while it runs:
that, the gradients (O(T * D)) and one segment's temporaries.

Gradients, with lam = exp(-slope), R_n the gradient flowing into the state at the end of chunk n
(R = dS_final after the last chunk, R_{n-1} = lam^C R_n + (Q_n * q_decay)^T dO_n), S_{n-1} the
state before chunk n and M the intra-chunk decay mask (`chunk_decays`):
    dQ = (dO S_{n-1}^T) * q_decay + ((dO V^T) * M) K
    dK = (V * k_decay) R_n^T       + ((dO V^T) * M)^T Q
    dV = (K * k_decay) R_n         + ((Q K^T) * M)^T dO
    d initial_state = R_{-1}
The decay rates (slope) are fixed buffers in MiniMax and get no gradient.
"""

from __future__ import annotations

import torch

from kernels.lightning._common import check_inputs, chunk_decays, initial, state_dtype

# Tokens x batch x heads x max(C, D) elements per temporary: segments of the sequence are processed
# one after another so that the temporaries stay cache-sized however long the sequence.
_SEGMENT_ELEMS = 1 << 20


def _segment_len(B: int, H: int, C: int, D: int) -> int:
    return C * max(1, _SEGMENT_ELEMS // (B * H * C * max(C, D)))


def _scan(local: torch.Tensor, block: torch.Tensor, s0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """States before each chunk [B,H,N,Dk,Dv] and after the last, from each chunk's own contribution.
    Each step writes its state straight into its slot (`out=`): a copy per chunk costs more than the step."""
    before = torch.empty_like(local)
    before[:, :, 0] = s0
    for n in range(1, local.shape[2]):
        torch.addcmul(local[:, :, n - 1], block, before[:, :, n - 1], out=before[:, :, n])
    return before, torch.addcmul(local[:, :, -1], block, before[:, :, -1])


def _reverse_scan(
    local: torch.Tensor, block: torch.Tensor, r: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The backward scan: the gradient at the end of each chunk [B,H,N,Dk,Dv] (R_n) given R at the end
    of the last, and the gradient reaching the state before the first chunk."""
    after = torch.empty_like(local)
    after[:, :, -1] = r
    for n in range(local.shape[2] - 1, 0, -1):
        torch.addcmul(local[:, :, n], block, after[:, :, n], out=after[:, :, n - 1])
    return after, torch.addcmul(local[:, :, 0], block, after[:, :, 0])


def _plus_mm(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c + a @ b over the leading [B, H, N] dims, the sum done inside the GEMM (c fresh, overwritten)."""
    return c.flatten(0, 2).baddbmm_(a.flatten(0, 2), b.flatten(0, 2)).view(c.shape)


class _LightningChunkFn(torch.autograd.Function):
    """A sequence whose length is a multiple of the chunk size C (tensors already in the state dtype)."""

    @staticmethod
    def forward(ctx, q, k, v, slope, s0, C: int):  # type: ignore[override]
        B, H, T, Dk = q.shape
        q_decay, k_decay, intra, block = chunk_decays(slope, C, q.dtype)
        L = _segment_len(B, H, C, max(Dk, v.shape[-1]))
        o = torch.empty_like(v)
        starts = [s0]  # the state at each segment start: T/L small tensors, kept for backward
        for t0 in range(0, T, L):
            qc, kc, vc = (_chunks(x, t0, L, C) for x in (q, k, v))
            before, state = _scan((kc * k_decay).transpose(-1, -2) @ vc, block, starts[-1])
            oc = _plus_mm((qc @ kc.transpose(-1, -2)).mul_(intra) @ vc, qc * q_decay, before)
            o[:, :, t0 : t0 + L] = oc.flatten(2, 3)
            starts.append(state)
        ctx.save_for_backward(q, k, v, slope, *starts[:-1])
        ctx.C = C
        return o, starts[-1]

    @staticmethod
    def backward(ctx, do, dfinal):  # type: ignore[override]
        q, k, v, slope, *starts = ctx.saved_tensors
        C = ctx.C
        B, H, T, Dk = q.shape
        q_decay, k_decay, intra, block = chunk_decays(slope, C, q.dtype)
        L = _segment_len(B, H, C, max(Dk, v.shape[-1]))
        do = torch.zeros_like(v) if do is None else do
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        r = torch.zeros_like(starts[0]) if dfinal is None else dfinal  # gradient reaching the current state
        for t0, s_start in zip(reversed(range(0, T, L)), reversed(starts), strict=True):
            qc, kc, vc, doc = (_chunks(x, t0, L, C) for x in (q, k, v, do))
            kd, vd, qd = kc * k_decay, vc * k_decay, qc * q_decay
            before, _ = _scan(kd.transpose(-1, -2) @ vc, block, s_start)  # recomputed, not stored
            # Reverse scan within the segment: after[n] is R_n, the gradient at the end of chunk n.
            after, r = _reverse_scan(qd.transpose(-1, -2) @ doc, block, r)
            dov = (doc @ vc.transpose(-1, -2)).mul_(intra)
            qk = (qc @ kc.transpose(-1, -2)).mul_(intra)
            seg = slice(t0, t0 + L)
            dq[:, :, seg] = _plus_mm(dov @ kc, doc * q_decay, before.transpose(-1, -2)).flatten(2, 3)
            dk[:, :, seg] = _plus_mm(dov.transpose(-1, -2) @ qc, vd, after.transpose(-1, -2)).flatten(2, 3)
            dv[:, :, seg] = _plus_mm(qk.transpose(-1, -2) @ doc, kd, after).flatten(2, 3)
        return dq, dk, dv, None, r, None


def _chunks(x: torch.Tensor, t0: int, L: int, C: int) -> torch.Tensor:
    """Tokens t0 .. t0+L of x [B,H,T,D] as [B,H,N,C,D], contiguous: one copy here rather than one
    inside every batched matmul (which cannot fold the B, H, N dims of a strided slice)."""
    seg = x[:, :, t0 : t0 + L]
    return seg.reshape(*seg.shape[:2], -1, C, seg.shape[-1]).contiguous()


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
