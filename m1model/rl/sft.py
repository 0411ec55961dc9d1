"""A short supervised warm start before RL: next-token cross-entropy on prompt + reference answer, with
the loss on the answer tokens only (the prompt is context, not a target).

M1 starts RL from an SFT model (section 2.2); the tiny bundled model needs the same, or it would never
sample a rewarded answer for RL to reinforce.

Data-parallel under torchrun: every rank draws the same global batch and trains on every world_size-th
example of it. The loss is the mean over the *global* batch's answer tokens (their count all-reduced),
so the step equals the single-process step on the same batch.
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
        idx = idx[dist.rank :: dist.world_size]
        ids, attn, target = (t.to(device) for t in sft_batch([examples[i] for i in idx], cfg.pad_token_id))
        (tokens,) = dist.sum(float(target.sum()))  # answer tokens of the global batch
        logp = parallel.logprobs(ids, attn, positions=target > 0)  # the head at answer tokens only
        loss = -(logp * target).sum() / max(tokens, 1.0)  # this rank's part of the global mean
        optimizer.zero_grad(set_to_none=True)
        (loss * dist.world_size).backward()  # DDP/FSDP average gradients over ranks
        norm = parallel.clip_grad_norm_(cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
        (loss_value,) = dist.sum(float(loss.detach()))
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
