"""Evaluation on held-out items: the one implementation every caller measures a policy with.

`m1 run` (before and after training), each curriculum stage (at its start, its end and every
``eval.every`` steps), `m1 experiment algorithms` (each arm's held-out curve) and the SWE rollouts of the
evaluation flow all generate through `greedy_completions` and count through `greedy_pass_rate`, so a
fix to how a policy is measured holds for every number the project reports. `sampled_pass_rate` is the
second view the experiments report beside it: mean@k, k answers per item sampled at the temperature
the policy trains with, the pass rate the policy gradient itself maximises (greedy decoding reads only
the mode of the same distribution).

Decoding is greedy (temperature 0) with the stop tokens training samples with, from prompts encoded the
way training encodes them (the caller passes token ids: m1model knows no prompt format). An item is
solved when its reward is 1: verifiers keep rewards in [0, 1], and a math answer that is right but not
boxed earns less than 1.

Counts come with intervals, because a pass rate over a hundred items moves by several points by chance:
`PassRate.interval` is Wilson's score interval, and `PairedChange` compares two policies on the *same*
items (before and after training), where the items both solve or both miss carry no information about
the difference: its interval is Agresti and Min's adjusted Wald interval for paired proportions and its
test McNemar's exact test, both on the discordant items alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist, variance
from typing import Any

import torch

from m1model.engine import Completion, Engine, SamplingParams
from m1model.rl.rollout import SOLVED

RewardFn = Callable[[Sequence[Any], Sequence[Sequence[int]]], Sequence[float]]


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials ((0, 1) when n = 0)."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = _z(confidence)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class PassRate:
    """Which items a policy solved, in the order they were given."""

    solved: tuple[bool, ...]

    @property
    def n(self) -> int:
        return len(self.solved)

    @property
    def k(self) -> int:
        return sum(self.solved)

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else 0.0

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        return wilson_interval(self.k, self.n, confidence)

    def __str__(self) -> str:
        lo, hi = self.interval()
        return f"{self.k}/{self.n} ({self.rate:.1%}, 95% CI {lo:.1%}-{hi:.1%})"

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {"k": self.k, "n": self.n, "rate": self.rate, "ci95": [lo, hi], "solved": list(self.solved)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PassRate:
        return cls(tuple(bool(s) for s in d["solved"]))


@dataclass(frozen=True)
class PairedChange:
    """From ``before`` to ``after`` on the same n items: ``gained`` solved only after, ``lost`` only before."""

    gained: int
    lost: int
    n: int

    @classmethod
    def of(cls, before: PassRate, after: PassRate) -> PairedChange:
        if before.n != after.n:
            raise ValueError(f"paired comparison needs the same items: {before.n} vs {after.n}")
        gained = sum(a and not b for b, a in zip(before.solved, after.solved, strict=True))
        lost = sum(b and not a for b, a in zip(before.solved, after.solved, strict=True))
        return cls(gained, lost, before.n)

    @property
    def difference(self) -> float:
        return (self.gained - self.lost) / self.n if self.n else 0.0

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Agresti-Min: half a pseudo-count added to each of the four cells, then the Wald interval."""
        z = _z(confidence)
        b, c, n = self.gained + 0.5, self.lost + 0.5, self.n + 2.0
        d = (b - c) / n
        se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
        return max(-1.0, d - z * se), min(1.0, d + z * se)

    def p_value(self) -> float:
        """McNemar's exact two-sided test: under no change, each discordant item is a fair coin."""
        m = self.gained + self.lost
        if m == 0:
            return 1.0
        tail = sum(math.comb(m, i) for i in range(min(self.gained, self.lost) + 1)) / 2**m
        return min(1.0, 2 * tail)

    def verdict(self, confidence: float = 0.95) -> str:
        """'gain' or 'loss' when the interval excludes 0, else 'no change'."""
        lo, hi = self.interval(confidence)
        return "gain" if lo > 0 else "loss" if hi < 0 else "no change"


@dataclass(frozen=True)
class SampledPassRate:
    """Per item, how many of ``samples`` sampled answers solved it, in the order the items were given.

    ``rate`` is mean@k: the expected pass rate of one sampled answer, estimated from k per item (the way
    reasoning models' pass@1 is usually reported). Its interval treats the items as the sample (a normal
    interval on the per-item solved fractions): the k answers to one item share its difficulty, so they
    are not k independent draws of the set's accuracy."""

    solved: tuple[int, ...]
    samples: int

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        if any(not 0 <= s <= self.samples for s in self.solved):
            raise ValueError(f"each item's solved count must be in [0, {self.samples}]")

    @property
    def n(self) -> int:
        return len(self.solved)

    @property
    def rate(self) -> float:
        return sum(self.solved) / (self.n * self.samples) if self.n else 0.0

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        if self.n < 2:
            return 0.0, 1.0
        half = _z(confidence) * math.sqrt(variance([s / self.samples for s in self.solved]) / self.n)
        return max(0.0, self.rate - half), min(1.0, self.rate + half)

    def __str__(self) -> str:
        lo, hi = self.interval()
        return f"{self.rate:.1%} (mean@{self.samples} over {self.n} items, 95% CI {lo:.1%}-{hi:.1%})"

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {
            "samples": self.samples,
            "n": self.n,
            "rate": self.rate,
            "ci95": [lo, hi],
            "solved": list(self.solved),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampledPassRate:
        return cls(tuple(int(s) for s in d["solved"]), int(d["samples"]))


def _generate(
    model: torch.nn.Module, prompts: Sequence[Sequence[int]], params: SamplingParams
) -> list[Completion]:
    """``model``'s continuations in eval mode (no dropout); its mode is restored."""
    was_training = model.training
    model.eval()
    try:
        return Engine(model).generate([list(p) for p in prompts], params)
    finally:
        model.train(was_training)


def greedy_completions(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    stop_token_ids: Sequence[int] = (),
) -> list[Completion]:
    """Greedy continuations of ``prompts`` (token ids) by ``model`` in eval mode; its mode is restored."""
    params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, stop_token_ids=tuple(stop_token_ids))
    return _generate(model, prompts, params)


def greedy_pass_rate(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    items: Sequence[Any],
    reward_fn: RewardFn,
    *,
    max_new_tokens: int,
    stop_token_ids: Sequence[int] = (),
) -> PassRate:
    """Which of ``items`` the greedy answer to its prompt solves (reward 1 under ``reward_fn``)."""
    if len(prompts) != len(items):
        raise ValueError(f"{len(prompts)} prompts but {len(items)} items")
    if not items:
        raise ValueError("no evaluation items")
    completions = greedy_completions(
        model, prompts, max_new_tokens=max_new_tokens, stop_token_ids=stop_token_ids
    )
    rewards = reward_fn(items, [c.token_ids for c in completions])
    return PassRate(tuple(float(r) >= SOLVED for r in rewards))


def sampled_pass_rate(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    items: Sequence[Any],
    reward_fn: RewardFn,
    *,
    samples: int,
    max_new_tokens: int,
    stop_token_ids: Sequence[int] = (),
    temperature: float = 1.0,
    seed: int = 0,
) -> SampledPassRate:
    """How many of ``samples`` answers to each of ``items``, sampled at ``temperature`` with a fixed
    ``seed`` (policies compared on the same seed share their random numbers), solve it (reward 1)."""
    if len(prompts) != len(items):
        raise ValueError(f"{len(prompts)} prompts but {len(items)} items")
    if not items:
        raise ValueError("no evaluation items")
    if samples < 1 or temperature <= 0:
        raise ValueError(f"need samples >= 1 and temperature > 0, got {samples} and {temperature}")
    params = SamplingParams(
        temperature=temperature, max_tokens=max_new_tokens, stop_token_ids=tuple(stop_token_ids), seed=seed
    )
    completions = _generate(model, [p for p in prompts for _ in range(samples)], params)
    rewards = reward_fn([i for i in items for _ in range(samples)], [c.token_ids for c in completions])
    solved = [float(r) >= SOLVED for r in rewards]
    return SampledPassRate(
        tuple(sum(solved[i * samples : (i + 1) * samples]) for i in range(len(items))), samples
    )
