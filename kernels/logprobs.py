"""Log-probabilities of chosen tokens, computed in FP32 a block at a time.

RL losses need log pi(label) for every generated token: a [tokens x vocab] softmax that, in FP32
(the paper's precision fix for the LM head), is the largest tensor of a training step: 8K tokens x
200K vocab is 6.5 GB. Here the head runs over blocks of tokens and of the vocabulary with an online
log-sum-exp, and the backward pass recomputes each block from the saved per-token log-sum-exp, so
nothing larger than [token_chunk x vocab_chunk] is ever alive in FP32.

    d logp_i / d z_ij = [j == label_i] - p_ij
    d H_i    / d z_ij = -p_ij (log p_ij + H_i)            (H_i the per-token entropy)
"""

from __future__ import annotations

import torch

IGNORE_INDEX = -100


def _blocks(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _acc(x: torch.Tensor) -> torch.dtype:
    """FP32, or FP64 for float64 inputs (so gradcheck can run)."""
    return torch.promote_types(x.dtype, torch.float32)


def _logits(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    rows: tuple[int, int],
    cols: tuple[int, int],
) -> torch.Tensor:
    """One FP32 block of hidden @ weight^T (+ bias)."""
    acc = _acc(hidden)
    z = hidden[rows[0] : rows[1]].to(acc) @ weight[cols[0] : cols[1]].to(acc).T
    if bias is not None:
        z = z + bias[cols[0] : cols[1]].to(acc)
    return z


class _SelectiveLogSoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, hidden, weight, bias, labels, chunk_size: int, vocab_chunk_size: int, with_entropy: bool
    ):  # type: ignore[override]
        n, V = hidden.shape[0], weight.shape[0]
        dev, acc = hidden.device, _acc(hidden)
        logp = torch.zeros(n, dtype=acc, device=dev)
        lse = torch.empty(n, dtype=acc, device=dev)
        entropy = torch.zeros(n, dtype=acc, device=dev)
        valid = labels != IGNORE_INDEX
        for r0, r1 in _blocks(n, chunk_size):
            # Online log-sum-exp over vocabulary blocks, relative to the running max m:
            # s = sum exp(z - m), t = sum exp(z - m) * (z - m); then lse = m + log s, H = log s - t / s.
            m = torch.full((r1 - r0,), -torch.inf, dtype=acc, device=dev)
            s, t, picked = torch.zeros_like(m), torch.zeros_like(m), torch.zeros_like(m)
            label = labels[r0:r1]
            for c0, c1 in _blocks(V, vocab_chunk_size):
                z = _logits(hidden, weight, bias, (r0, r1), (c0, c1))
                inside = (label >= c0) & (label < c1)
                local = (label - c0).clamp(0, c1 - c0 - 1)
                picked = torch.where(inside, z.gather(1, local[:, None])[:, 0], picked)
                m_new = torch.maximum(m, z.amax(dim=1))
                shift = m - m_new  # <= 0; -inf on the first block, where s = t = 0
                rescale = torch.exp(shift)
                z -= m_new[:, None]  # in place: no second block-sized temporary
                e = torch.exp(z)
                if with_entropy:  # needs s from before this block
                    t = rescale * (t + torch.where(s > 0, shift * s, 0.0)) + (e * z).sum(1)
                s = rescale * s + e.sum(1)
                m = m_new
            lse[r0:r1] = m + torch.log(s)
            if with_entropy:
                entropy[r0:r1] = torch.log(s) - t / s
            logp[r0:r1] = picked - lse[r0:r1]
        logp = torch.where(valid, logp, 0.0)
        entropy = torch.where(valid, entropy, 0.0)
        ctx.save_for_backward(hidden, weight, bias, labels, lse, entropy)
        ctx.chunks = (chunk_size, vocab_chunk_size)
        ctx.set_materialize_grads(False)  # an unused entropy output costs nothing in backward
        return logp, entropy

    @staticmethod
    def backward(ctx, d_logp, d_entropy):  # type: ignore[override]
        hidden, weight, bias, labels, lse, entropy = ctx.saved_tensors
        chunk_size, vocab_chunk_size = ctx.chunks
        n, V = hidden.shape[0], weight.shape[0]
        valid = labels != IGNORE_INDEX
        acc = lse.dtype
        d_logp = torch.zeros_like(lse) if d_logp is None else torch.where(valid, d_logp.to(acc), 0.0)
        d_ent = None if d_entropy is None else torch.where(valid, d_entropy.to(acc), 0.0)
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        d_hidden = torch.zeros(hidden.shape, dtype=acc, device=hidden.device) if need_h else None
        d_weight = torch.zeros(weight.shape, dtype=acc, device=weight.device) if need_w else None
        d_bias = torch.zeros(V, dtype=acc, device=weight.device) if need_b else None
        for r0, r1 in _blocks(n, chunk_size):
            label = labels[r0:r1]
            g = d_logp[r0:r1, None]
            for c0, c1 in _blocks(V, vocab_chunk_size):
                dz = _logits(hidden, weight, bias, (r0, r1), (c0, c1))
                dz -= lse[r0:r1, None]  # log p, in place
                p = torch.exp(dz)
                if d_ent is None:
                    dz = p.mul_(-g)
                else:  # -p * (g + (log p + H) * dH)
                    dz.add_(entropy[r0:r1, None]).mul_(d_ent[r0:r1, None]).add_(g).mul_(p).neg_()
                idx = ((label >= c0) & (label < c1) & valid[r0:r1]).nonzero()[:, 0]
                dz[idx, label[idx] - c0] += d_logp[r0:r1][idx]
                if need_h:
                    d_hidden[r0:r1].addmm_(dz, weight[c0:c1].to(acc))
                if need_w:
                    d_weight[c0:c1].addmm_(dz.T, hidden[r0:r1].to(acc))
                if need_b:
                    d_bias[c0:c1] += dz.sum(0)
        return (
            d_hidden.to(hidden.dtype) if need_h else None,
            d_weight.to(weight.dtype) if need_w else None,
            d_bias.to(bias.dtype) if need_b else None,
            None,
            None,
            None,
            None,
        )


def selective_log_softmax(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor,
    bias: torch.Tensor | None = None,
    chunk_size: int = 1024,
    vocab_chunk_size: int = 4096,
    return_entropy: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """log softmax(hidden @ weight^T + bias)[label] per token in float32 (float64 for float64 inputs),
    without ever holding the full logits.

    hidden: [..., D]; weight: [V, D] (the LM head); labels: [...] token ids, IGNORE_INDEX (-100)
    gives 0 there and no gradient. Differentiable w.r.t. hidden, weight and bias. With
    return_entropy, also the per-token entropy of the distribution (differentiable too), which RL
    runs watch for collapse. Peak extra memory: [chunk_size x vocab_chunk_size] FP32 blocks.
    """
    if hidden.shape[:-1] != labels.shape:
        raise ValueError(
            f"labels must be hidden's leading shape {tuple(hidden.shape[:-1])}; got {tuple(labels.shape)}"
        )
    if weight.dim() != 2 or weight.shape[1] != hidden.shape[-1]:
        raise ValueError(f"weight must be [V, {hidden.shape[-1]}]; got {tuple(weight.shape)}")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"bias must be [{weight.shape[0]}]; got {tuple(bias.shape)}")
    if chunk_size < 1 or vocab_chunk_size < 1:
        raise ValueError(f"chunk sizes must be >= 1; got {chunk_size}, {vocab_chunk_size}")
    _check_labels(labels, weight.shape[0])
    logp, entropy = _SelectiveLogSoftmaxFn.apply(
        hidden.reshape(-1, hidden.shape[-1]),
        weight,
        bias,
        labels.reshape(-1).long(),
        chunk_size,
        vocab_chunk_size,
        return_entropy,
    )
    return (
        (logp.reshape(labels.shape), entropy.reshape(labels.shape))
        if return_entropy
        else logp.reshape(labels.shape)
    )


class _LogitsLogSoftmaxFn(torch.autograd.Function):
    """The same from logits that already exist (e.g. bf16 from a model): FP32 per token chunk."""

    @staticmethod
    def forward(ctx, logits, labels, chunk_size: int, with_entropy: bool):  # type: ignore[override]
        n = logits.shape[0]
        logp = torch.zeros(n, dtype=_acc(logits), device=logits.device)
        lse, entropy = torch.empty_like(logp), torch.zeros_like(logp)
        valid = labels != IGNORE_INDEX
        safe = torch.where(valid, labels, 0)
        for r0, r1 in _blocks(n, chunk_size):
            block = logits[r0:r1]
            logp[r0:r1] = block.gather(1, safe[r0:r1, None])[:, 0].to(logp.dtype)
            m = block.amax(dim=1, keepdim=True).to(logp.dtype)  # amax + exp: faster than torch.logsumexp
            z = block.to(logp.dtype) - m
            e = torch.exp(z)
            s = e.sum(1)
            lse[r0:r1] = m[:, 0] + torch.log(s)
            if with_entropy:
                entropy[r0:r1] = torch.log(s) - (e * z).sum(1) / s
        logp -= lse
        entropy = torch.where(valid, entropy, 0.0)
        ctx.save_for_backward(logits, labels, lse, entropy)
        ctx.chunk_size = chunk_size
        ctx.set_materialize_grads(False)
        return torch.where(valid, logp, 0.0), entropy

    @staticmethod
    def backward(ctx, d_logp, d_entropy):  # type: ignore[override]
        logits, labels, lse, entropy = ctx.saved_tensors
        valid = labels != IGNORE_INDEX
        acc = lse.dtype
        d_logp = torch.zeros_like(lse) if d_logp is None else torch.where(valid, d_logp.to(acc), 0.0)
        d_ent = None if d_entropy is None else torch.where(valid, d_entropy.to(acc), 0.0)
        safe = torch.where(valid, labels, 0)
        d_logits = torch.empty_like(logits)
        for r0, r1 in _blocks(logits.shape[0], ctx.chunk_size):
            g = d_logp[r0:r1, None]
            dz = logits[r0:r1].to(acc) - lse[r0:r1, None]  # log p
            p = torch.exp(dz)
            if d_ent is None:
                dz = p.mul_(-g)
            else:  # -p * (g + (log p + H) * dH)
                dz.add_(entropy[r0:r1, None]).mul_(d_ent[r0:r1, None]).add_(g).mul_(p).neg_()
            dz.scatter_add_(1, safe[r0:r1, None], g)
            d_logits[r0:r1] = dz
        return d_logits, None, None, None


def selective_log_softmax_from_logits(
    logits: torch.Tensor, labels: torch.Tensor, chunk_size: int = 1024, return_entropy: bool = False
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """log_softmax(logits)[label] per token in float32 (float64 for float64 logits), never holding
    more than chunk_size FP32 rows.

    logits: [..., V] in any float dtype; labels: [...]; IGNORE_INDEX (-100) gives 0 and no gradient.
    With return_entropy, also the per-token entropy (differentiable), from the same pass.
    """
    if logits.shape[:-1] != labels.shape:
        raise ValueError(
            f"labels must be logits' leading shape {tuple(logits.shape[:-1])}; got {tuple(labels.shape)}"
        )
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    _check_labels(labels, logits.shape[-1])
    logp, entropy = _LogitsLogSoftmaxFn.apply(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).long(), chunk_size, return_entropy
    )
    if return_entropy:
        return logp.reshape(labels.shape), entropy.reshape(labels.shape)
    return logp.reshape(labels.shape)


def _check_labels(labels: torch.Tensor, V: int) -> None:
    if labels.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"labels must be integer token ids; got {labels.dtype}")
    bad = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= V))
    if bool(bad.any()):
        raise ValueError(f"labels must be in [0, {V}) or {IGNORE_INDEX}; got {labels[bad][0].item()}")
