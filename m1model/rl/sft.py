"""A short supervised warm start before RL: next-token cross-entropy on prompt + reference answer, with
the loss on the answer tokens only (the prompt is context, not a target).

M1 starts RL from an SFT model (section 2.2); the tiny bundled model needs the same, or it would never
sample a rewarded answer for RL to reinforce.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

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
    """Mean negative log-likelihood per answer token."""
    logp = model.token_logprobs(ids, attn)
    return -(logp * target).sum() / target.sum().clamp_min(1.0)


def sft_warm_start(
    model: torch.nn.Module,
    examples: Sequence[tuple[Sequence[int], Sequence[int]]],
    cfg: SFTConfig,
    on_step: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train on (prompt_ids, answer_ids) pairs for ``cfg.steps`` steps; returns per-step metrics."""
    if not examples:
        raise ValueError("SFT needs at least one (prompt, answer) example")
    if any(len(p) == 0 or len(a) == 0 for p, a in examples):
        raise ValueError("every SFT example needs a non-empty prompt and a non-empty answer")
    device = next(model.parameters()).device
    optimizer = paper_adamw(model.parameters(), cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    history = []
    model.train()
    for step in range(cfg.steps):
        idx = rng.choice(len(examples), size=cfg.batch_size, replace=len(examples) < cfg.batch_size)
        ids, attn, target = (t.to(device) for t in sft_batch([examples[i] for i in idx], cfg.pad_token_id))
        loss = answer_nll(model, ids, attn, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(
            model.parameters(), cfg.grad_clip if cfg.grad_clip > 0 else math.inf
        )
        finite = math.isfinite(float(loss.detach())) and math.isfinite(float(norm))
        if finite:
            optimizer.step()
        m = {
            "step": float(step + 1),
            "loss": float(loss.detach()),
            "grad_norm": float(norm),
            "finite": float(finite),
        }
        history.append(m)
        if on_step is not None:
            on_step(m)
    return history
