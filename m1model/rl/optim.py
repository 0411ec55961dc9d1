"""The optimizer of MiniMax-M1 section 3.2.

Gradients in M1's RL span 1e-18..1e-5 (most below 1e-14) and are weakly correlated across steps, so the
usual (0.9, 0.999, eps=1e-8) never converged for them: eps=1e-8 swamps the second-moment estimate of
almost every gradient. They use beta2 = 0.95 and eps = 1e-15.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

BETAS = (0.9, 0.95)
EPS = 1e-15


def paper_adamw(
    params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float = 0.0
) -> torch.optim.AdamW:
    return torch.optim.AdamW(
        [p for p in params if p.requires_grad], lr=lr, betas=BETAS, eps=EPS, weight_decay=weight_decay
    )
