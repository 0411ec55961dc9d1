"""The algorithms experiment's numbers over seeds: an `Estimate` (mean, standard error, Student-t 95%
interval), each arm's summary (`summarise`) and summary.json's contract (`summary_json`). The definitions
are flows/experiments/summary.py's, which renders them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from flows.experiments.arms import BASELINE, Arm
from flows.experiments.runs import RunResult
from m1model.rl.evaluation import PassRate


def reward_curve(result: RunResult) -> np.ndarray:
    return np.array([h["reward_mean"] for h in result.history if "reward_mean" in h])


def _mean_over(history: list[dict[str, float]], key: str) -> float:
    values = [h[key] for h in history if key in h]
    return float(np.mean(values)) if values else float("nan")


@dataclass(frozen=True)
class Estimate:
    """Mean over seeds with its standard error and Student-t 95% interval (None with one seed)."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else float("nan")

    @property
    def se(self) -> float | None:
        n = len(self.values)
        return float(np.std(self.values, ddof=1) / math.sqrt(n)) if n > 1 else None

    @property
    def interval(self) -> tuple[float, float] | None:
        if self.se is None:
            return None
        half = float(stats.t.ppf(0.975, len(self.values) - 1)) * self.se
        return self.mean - half, self.mean + half

    def text(self, fmt: str = "{:.3f}") -> str:
        if not self.values:
            return "-"
        return fmt.format(self.mean) + ("" if self.se is None else f" ± {fmt.format(self.se)}")

    def interval_text(self, fmt: str = "{:.3f}") -> str:
        return (
            "-"
            if self.interval is None
            else f"{fmt.format(self.interval[0])} to {fmt.format(self.interval[1])}"
        )


@dataclass
class ArmSummary:
    arm: Arm
    seeds: list[int]
    after: Estimate  # held-out accuracy at the end (greedy)
    sampled: Estimate  # held-out mean@k at the end (sampled at temperature 1; empty when none was taken)
    final: list[float | None]  # final training reward per seed (None for SFT)
    reach: list[int | None]  # steps to reach DAPO's final held-out accuracy, per seed
    clipped: list[float]
    dropped: list[float]
    entropy: list[float]
    seconds: list[float]
    curves: list[list[tuple[int, PassRate]]]


def target_arm(arms: Sequence[Arm]) -> str:
    """The arm whose final held-out accuracy 'steps to target' counts to: DAPO (the paper's claim), or the
    first arm when the run has no DAPO arm."""
    names = [a.name for a in arms]
    return names[0] if names and BASELINE not in names else BASELINE


def summarise(
    results: Sequence[RunResult], arms: Sequence[Arm], window: int
) -> tuple[list[ArmSummary], float]:
    """Per arm, its numbers over seeds; and the target of 'steps to target' (DAPO's final held-out
    accuracy, or the first arm's when there is no DAPO arm)."""
    by_arm = {a.name: [r for r in results if r.arm == a.name] for a in arms}
    base_runs = by_arm[target_arm(arms)]
    target = float(np.mean([r.heldout_after for r in base_runs]))
    out = []
    for arm in arms:
        runs = by_arm[arm.name]
        reach = []
        for r in runs:
            # step 0 is the warm start: a run whose warm start already meets the target needs no step
            hit = [step for step, p in r.heldout_curve if p.rate >= target - 1e-12]
            reach.append(hit[0] if hit else None)
        out.append(
            ArmSummary(
                arm=arm,
                seeds=[r.seed for r in runs],
                after=Estimate(tuple(r.heldout_after for r in runs)),
                sampled=Estimate(tuple(r.sampled_after.rate for r in runs if r.sampled_after is not None)),
                final=[
                    float(reward_curve(r)[-window:].mean()) if reward_curve(r).size else None for r in runs
                ],
                reach=reach,
                clipped=[_mean_over(r.history, "clip_fraction") for r in runs],
                dropped=[_mean_over(r.history, "masked_fraction") for r in runs],
                entropy=[_mean_over(r.history, "entropy") for r in runs],
                seconds=[r.seconds for r in runs],
                curves=[r.heldout_curve for r in runs],
            )
        )
    return out, target


def summary_json(summaries: Sequence[ArmSummary], warm: PassRate) -> dict:
    """The contract: {"heldout_items": N, "arms": {ARM: [{"seed", "heldout_before", "heldout_after",
    "final_reward", "steps_to_target", "heldout_curve"}, ...]}}."""
    return {
        "heldout_items": warm.n,
        "arms": {
            s.arm.name: [
                {
                    "seed": seed,
                    "heldout_before": warm.rate,
                    "heldout_after": after,
                    "final_reward": final,
                    "steps_to_target": reach,
                    "heldout_curve": [[step, p.rate] for step, p in curve],
                }
                for seed, after, final, reach, curve in zip(
                    s.seeds, s.after.values, s.final, s.reach, s.curves, strict=True
                )
            ]
            for s in summaries
        },
    }
