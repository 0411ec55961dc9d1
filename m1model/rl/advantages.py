"""Rewards to advantages: group-relative advantages (GRPO, MiniMax-M1 Eq. 2), DAPO's dynamic sampling
filter and overlong reward shaping.

Rewards arrive as a [n_groups, G] tensor: G responses sampled for each prompt.
"""

from __future__ import annotations

import torch
from torch import Tensor


def group_advantages(rewards: Tensor, *, normalize_std: bool = True, eps: float = 1e-6) -> Tensor:
    """A_i = (R_i - mean_j R_j) / (std_j R_j + eps) within each group (row); [n_groups, G] -> same.

    ``std`` is the unbiased sample std as in TRL's and verl's GRPO. ``normalize_std=False`` keeps only
    the mean baseline (Dr. GRPO, arXiv:2503.20783): the std division up-weights groups that are almost
    all right or all wrong.
    """
    if rewards.dim() != 2 or rewards.shape[1] < 2:
        raise ValueError(f"rewards must be [n_groups, G] with G >= 2, got {tuple(rewards.shape)}")
    rewards = rewards.to(torch.float32)
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    if not normalize_std:
        return centred
    return centred / (rewards.std(dim=1, keepdim=True) + eps)


def informative_groups(rewards: Tensor, atol: float = 1e-9) -> Tensor:
    """DAPO dynamic sampling: a group whose rewards are all equal has zero advantage everywhere and
    adds no gradient, only noise in the normalisation; keep groups with some spread. [n_groups] bool."""
    return (rewards.max(dim=1).values - rewards.min(dim=1).values) > atol


def overlong_penalty(lengths: Tensor, max_len: int, cache_len: int) -> Tensor:
    """DAPO's soft overlong punishment (Eq. 13): 0 up to max_len - cache_len, then a linear ramp to -1
    at max_len, -1 beyond. Added to the task reward so truncated rambling is discouraged smoothly."""
    if not 0 <= cache_len < max_len:
        raise ValueError(f"need 0 <= cache_len < max_len, got cache_len={cache_len}, max_len={max_len}")
    lengths = lengths.to(torch.float32)
    soft = max_len - cache_len
    ramp = (soft - lengths) / max(cache_len, 1)
    return torch.where(
        lengths <= soft, torch.zeros_like(lengths), torch.where(lengths <= max_len, ramp, -1.0)
    )
