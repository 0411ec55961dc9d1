"""Rollouts: sample G responses per prompt with the engine, score them, keep informative groups, and
collate everything into the padded tensors the losses consume.

The engine returns, with each sampled token, its log-probability under the policy that sampled it:
that is pi_old of the IS ratio, so no extra forward pass is needed before the first update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch
from torch import Tensor

from m1model.rl.advantages import group_advantages, overlong_penalty

# reward_fn(items, responses) -> one float per response; responses are the generated token ids.
# Injected by the caller (flows builds it from the verifier registry), so m1model knows no verifier.
RewardFn = Callable[[Sequence[Any], Sequence[Sequence[int]]], Sequence[float]]


@dataclass
class PromptPool:
    """Tokenised prompts, the items they came from (passed back to the reward function), and optional
    sampling weights (a curriculum's task mixture turned into per-item weights)."""

    prompts: Sequence[Sequence[int]]
    items: Sequence[Any]
    weights: Sequence[float] | None = None

    def __post_init__(self) -> None:
        if not self.prompts:
            raise ValueError("the prompt pool is empty")
        if len(self.prompts) != len(self.items):
            raise ValueError(f"{len(self.prompts)} prompts but {len(self.items)} items")
        self.set_weights(self.weights)

    def set_weights(self, weights: Sequence[float] | None) -> None:
        """Replace the sampling weights (a curriculum moves them between steps); None: uniform."""
        self.weights = weights
        if weights is None:
            self._p = None
            return
        w = np.asarray(weights, dtype=np.float64)
        if len(w) != len(self.prompts) or (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights must be one non-negative number per prompt, not all zero")
        self._p = w / w.sum()

    def sample(self, n: int, rng: np.random.Generator) -> list[int]:
        """n distinct prompt indices (with replacement only if the pool is smaller than n)."""
        support = len(self.prompts) if self._p is None else int((self._p > 0).sum())
        return rng.choice(len(self.prompts), size=n, replace=support < n, p=self._p).tolist()


@dataclass
class Group:
    """One prompt and its G sampled responses."""

    index: int
    prompt: list[int]
    responses: list[list[int]]
    logprobs: list[list[float]]
    finish_reasons: list[str]
    rewards: list[float]


@dataclass
class RolloutBatch:
    groups: list[Group]  # the groups the update trains on (informative ones, with dynamic sampling)
    sampled_groups: list[Group] = field(default_factory=list)  # every group of every round
    rounds: int = 0

    @property
    def sampled(self) -> int:
        return len(self.sampled_groups)

    @property
    def all_rewards(self) -> list[float]:  # every response of every round
        return [r for g in self.sampled_groups for r in g.rewards]

    @property
    def all_lengths(self) -> list[int]:
        return [len(r) for g in self.sampled_groups for r in g.responses]

    @property
    def all_indices(self) -> list[int]:  # the pool index of each response's prompt
        return [g.index for g in self.sampled_groups for _ in g.responses]

    @property
    def all_finish_reasons(self) -> list[str]:
        return [f for g in self.sampled_groups for f in g.finish_reasons]

    @property
    def mean_nll(self) -> float:
        """Mean negative log-likelihood per generated token under the sampling policy: the log of the
        perplexity of the generated sequences (M1 section 5 watches it converge before widening)."""
        logps = [lp for g in self.sampled_groups for seq in g.logprobs for lp in seq]
        return -float(np.mean(logps)) if logps else 0.0


def score_groups(
    groups: list[Group], pool: PromptPool, reward_fn: RewardFn, *, max_new_tokens: int, overlong_cache: int
) -> None:
    items = [pool.items[g.index] for g in groups for _ in g.responses]
    responses = [r for g in groups for r in g.responses]
    rewards = [float(r) for r in reward_fn(items, responses)]
    if len(rewards) != len(responses):
        raise ValueError(f"reward_fn returned {len(rewards)} rewards for {len(responses)} responses")
    if overlong_cache:
        lengths = torch.tensor([len(r) for r in responses])
        rewards = (torch.tensor(rewards) + overlong_penalty(lengths, max_new_tokens, overlong_cache)).tolist()
    it = iter(rewards)
    for g in groups:
        g.rewards = [next(it) for _ in g.responses]


@dataclass
class Collated:
    """Right-padded prompt+response rows. Shifted tensors are [N, L-1]: position t scores token t+1."""

    input_ids: Tensor
    attention_mask: Tensor
    response_mask: Tensor
    old_logp: Tensor
    advantages: Tensor
    group_index: Tensor

    def to(self, device: torch.device) -> Collated:
        return Collated(*(getattr(self, f.name).to(device) for f in fields(self)))

    def rows(self, index: Tensor) -> Collated:
        """A subset of rows, trimmed to its longest sequence."""
        length = int(self.attention_mask[index].sum(1).max())
        return Collated(
            self.input_ids[index, :length],
            self.attention_mask[index, :length],
            self.response_mask[index, : length - 1],
            self.old_logp[index, : length - 1],
            self.advantages[index],
            self.group_index[index],
        )


def collate(groups: list[Group], *, normalize_std: bool, pad_id: int = 0) -> Collated:
    rewards = torch.tensor([g.rewards for g in groups], dtype=torch.float32)
    adv = group_advantages(rewards, normalize_std=normalize_std).flatten()
    rows = [
        (gi, g.prompt, r, lp)
        for gi, g in enumerate(groups)
        for r, lp in zip(g.responses, g.logprobs, strict=True)
    ]
    length = max(len(p) + len(r) for _, p, r, _ in rows)
    n = len(rows)
    ids = torch.full((n, length), pad_id, dtype=torch.long)
    attn = torch.zeros(n, length, dtype=torch.long)
    resp = torch.zeros(n, length - 1)
    old = torch.zeros(n, length - 1)
    for i, (_, prompt, response, logprobs) in enumerate(rows):
        p, r = len(prompt), len(response)
        if len(logprobs) != r:
            raise ValueError(f"engine returned {len(logprobs)} logprobs for {r} tokens")
        ids[i, : p + r] = torch.tensor(list(prompt) + list(response))
        attn[i, : p + r] = 1
        resp[i, p - 1 : p + r - 1] = 1
        old[i, p - 1 : p + r - 1] = torch.tensor(logprobs, dtype=torch.float32)
    group_index = torch.tensor([gi for gi, *_ in rows])
    return Collated(ids, attn, resp, old, adv, group_index)
