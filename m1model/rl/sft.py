"""A short supervised warm start before RL: next-token cross-entropy on prompt + reference answer, with
the loss on the answer tokens only (the prompt is context, not a target).

M1 starts RL from an SFT model (section 2.2); the tiny bundled model needs the same, or it would never
sample a rewarded answer for RL to reinforce.

Data-parallel under torchrun: every rank draws the same global batch and trains on every world_size-th
example of it. The loss is the mean over the *global* batch's answer tokens (their count all-reduced),
so the step equals the single-process step on the same batch.

A batch is padded to its longest row, and SFT rows vary a lot in length (a short math prompt beside a
logic puzzle), so each rank's part of the batch is sorted by length and cut into micro-batches of like
length (`length_micro_batches`) whose gradients accumulate: the same step, to float rounding, on fewer
padded tokens. The global batch, its sampling and the loss's normalisation are unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from m1model.rl.distributed import DataParallel
from m1model.rl.optim import paper_adamw


@dataclass
class SFTConfig:
    steps: int = 100
    lr: float = 1e-3
    batch_size: int = 16
    grad_clip: float = 1.0
    pad_token_id: int = 0
    seed: int = 0
    # What one extra forward and backward costs, in padded tokens: the bundled model's per-call overhead
    # on a CPU (`m1 bench sft`); 0 splits as finely as padding alone asks, a huge value never splits.
    micro_batch_overhead_tokens: int = 256


def sft_batch(
    examples: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded (input_ids, attention_mask, answer_mask); answer_mask is [B, L-1] over targets."""
    length = max(len(p) + len(a) for p, a in examples)
    ids = torch.full((len(examples), length), pad_id, dtype=torch.long)
    attn = torch.zeros(len(examples), length, dtype=torch.long)
    target = torch.zeros(len(examples), length - 1)
    for i, (prompt, answer) in enumerate(examples):
        p, a = len(prompt), len(answer)
        ids[i, : p + a] = torch.tensor(list(prompt) + list(answer))
        attn[i, : p + a] = 1
        target[i, p - 1 : p + a - 1] = 1
    return ids, attn, target


def length_micro_batches(lengths: Sequence[int], overhead_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` cut into micro-batches, each a run of the length-sorted order, minimising
    the padded tokens (rows times the longest row, summed) plus ``overhead_tokens`` per micro-batch.

    Exact by dynamic programming over the cut points (a batch is tens of rows): best[j] is the cheapest
    cover of the j shortest rows, whose last micro-batch runs from some i to j and pads to row j-1."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    sizes = [lengths[i] for i in order]
    best, cut = [0.0] + [math.inf] * len(sizes), [0] * (len(sizes) + 1)
    for j in range(1, len(sizes) + 1):
        for i in range(j):
            cost = best[i] + (j - i) * sizes[j - 1] + overhead_tokens
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], len(sizes)
    while j > 0:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def answer_nll(
    model: torch.nn.Module, ids: torch.Tensor, attn: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Mean negative log-likelihood per answer token.

    The LM head runs only at the answer positions: with long prompts and short answers (a judge's
    ``Grade: 4``) the head over every position would be most of the step's work, spent on no target.
    """
    h = model.model(ids, attn)[:, :-1]
    where = target > 0
    if not bool(where.any()):
        return h.sum() * 0.0
    logits = model.logits(h[where]).float()
    return torch.nn.functional.cross_entropy(logits, ids[:, 1:][where])


def sft_warm_start(
    model: torch.nn.Module,
    examples: Sequence[tuple[Sequence[int], Sequence[int]]],
    cfg: SFTConfig,
    on_step: Callable[[dict[str, float]], None] | None = None,
    *,
    parallel: DataParallel | None = None,
) -> list[dict[str, float]]:
    """Train on (prompt_ids, answer_ids) pairs for ``cfg.steps`` steps; returns per-step metrics.

    ``parallel``: the model's data-parallel view when running on several ranks (under FSDP its whole
    weights are then read with ``parallel.full_state_dict()``); default: this one process."""
    if not examples:
        raise ValueError("SFT needs at least one (prompt, answer) example")
    if any(len(p) == 0 or len(a) == 0 for p, a in examples):
        raise ValueError("every SFT example needs a non-empty prompt and a non-empty answer")
    parallel = parallel if parallel is not None else DataParallel(model)
    dist = parallel.ctx
    if cfg.batch_size < dist.world_size:
        raise ValueError(f"batch_size {cfg.batch_size} is smaller than the {dist.world_size} ranks")
    device = next(model.parameters()).device
    optimizer = paper_adamw(model.parameters(), cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    history = []
    model.train()
    for step in range(cfg.steps):
        idx = rng.choice(len(examples), size=cfg.batch_size, replace=len(examples) < cfg.batch_size)
        rows = [examples[i] for i in idx[dist.rank :: dist.world_size]]
        (tokens,) = dist.sum(float(sum(len(a) for _, a in rows)))  # answer tokens of the global batch
        micro = length_micro_batches([len(p) + len(a) for p, a in rows], cfg.micro_batch_overhead_tokens)
        n_micro = int(dist.max(len(micro)))  # DDP/FSDP: every rank runs as many forwards and backwards
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for k in range(n_micro):
            with parallel.accumulate(last=k == n_micro - 1):
                if k >= len(micro):  # this rank has run all its rows; others have not
                    parallel.dummy_backward()
                    continue
                ids, attn, target = (
                    t.to(device) for t in sft_batch([rows[i] for i in micro[k]], cfg.pad_token_id)
                )
                logp = parallel.logprobs(ids, attn, positions=target > 0)  # the head at answer tokens only
                loss = -(logp * target).sum() / max(tokens, 1.0)  # this part's share of the global mean
                (loss * dist.world_size).backward()  # DDP/FSDP average gradients over ranks
                loss_sum += float(loss.detach())
        norm = parallel.clip_grad_norm_(cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
        (loss_value,) = dist.sum(loss_sum)
        finite = dist.all_true(math.isfinite(loss_value) and math.isfinite(norm))
        if finite:
            optimizer.step()
        m = {
            "step": float(step + 1),
            "loss": loss_value,
            "grad_norm": norm,
            "finite": float(finite),
        }
        history.append(m)
        if on_step is not None:
            on_step(m)
    return history
