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
    generation_seconds: float = 0.0  # inside the engine, every round

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
    """Groups as the model's `group_logprobs` takes them: each group's prompt once, left-padded
    [groups, Lp], and the responses right-padded [N, R]; row n belongs to group (prompt row)
    group_index[n]. Response tensors are aligned: [n, t] is response token t of row n."""

    prompt_ids: Tensor
    prompt_mask: Tensor
    response_ids: Tensor
    response_mask: Tensor  # float, 1 at response tokens
    old_logp: Tensor
    advantages: Tensor
    group_index: Tensor

    def to(self, device: torch.device) -> Collated:
        return Collated(*(getattr(self, f.name).to(device) for f in fields(self)))

    def rows(self, index: Tensor) -> Collated:
        """The response rows ``index`` with their groups' prompts (groups renumbered in order), trimmed
        to the longest prompt and the longest response among them."""
        groups, group_index = self.group_index[index].unique(return_inverse=True)
        prompt_len = int(self.prompt_mask[groups].sum(1).max())
        # Rows of empty responses (EOS first) keep one masked column: the forward needs a token.
        length = max(1, int(self.response_mask[index].sum(1).max()))
        return Collated(
            self.prompt_ids[groups, -prompt_len:],
            self.prompt_mask[groups, -prompt_len:],
            self.response_ids[index, :length],
            self.response_mask[index, :length],
            self.old_logp[index, :length],
            self.advantages[index],
            group_index,
        )


SOLVED = 1.0 - 1e-9  # a reward of 1 (up to rounding): the response passed its verifier


def collate(
    groups: list[Group], *, normalize_std: bool, pad_id: int = 0, verified_only: bool = False
) -> Collated:
    """``verified_only``: the advantages are the 0/1 verdicts (rejection sampling keeps the verified
    responses) instead of group-relative (Eq. 2)."""
    rewards = torch.tensor([g.rewards for g in groups], dtype=torch.float32)
    if verified_only:
        adv = (rewards >= SOLVED).to(torch.float32).flatten()
    else:
        adv = group_advantages(rewards, normalize_std=normalize_std).flatten()
    prompt_len = max(len(g.prompt) for g in groups)
    prompts = torch.full((len(groups), prompt_len), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros(len(groups), prompt_len, dtype=torch.long)
    for gi, g in enumerate(groups):
        prompts[gi, prompt_len - len(g.prompt) :] = torch.tensor(g.prompt, dtype=torch.long)
        prompt_mask[gi, prompt_len - len(g.prompt) :] = 1
    rows = [(gi, r, lp) for gi, g in enumerate(groups) for r, lp in zip(g.responses, g.logprobs, strict=True)]
    length = max(1, *(len(r) for _, r, _ in rows))
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    resp = torch.zeros(len(rows), length)
    old = torch.zeros(len(rows), length)
    for i, (_, response, logprobs) in enumerate(rows):
        if len(logprobs) != len(response):
            raise ValueError(f"engine returned {len(logprobs)} logprobs for {len(response)} tokens")
        ids[i, : len(response)] = torch.tensor(list(response), dtype=torch.long)
        resp[i, : len(response)] = 1
        old[i, : len(response)] = torch.tensor(logprobs, dtype=torch.float32)
    group_index = torch.tensor([gi for gi, *_ in rows])
    return Collated(prompts, prompt_mask, ids, resp, old, adv, group_index)
