"""Curriculum weighting inside a stage (MiniMax-M1 sections 4.3 and 5), as a trainer step hook.

**Dynamic mixture weights.** Each mixture key k (a domain, or domain/task) has a configured weight w_k.
After every step its recent pass rate p_k (the mean reward, clipped to [0, 1], of its responses over the
last ``pass_rate_steps`` steps) sets its sampling weight

    w'_k = w_k * (floor + (1 - floor) * 4 p_k (1 - p_k))

so a key the policy always or never solves falls to ``floor * w_k``, and a key in the learnable band
(p near 0.5) keeps its full configured weight: the weights never exceed the stage's configuration. A key
not yet sampled keeps w_k. Within a key the weight is shared equally by its active items.

**Difficulty that rises with the model.** With ``raise_difficulty_above`` set, a key whose recent pass
rate exceeds it moves to its next difficulty level: items below the new minimum get weight 0, and the
key's pass-rate history starts afresh at the harder level.

The hook's state (recent pass rates, levels) is saved in the trainer's checkpoints, so a resumed stage
samples exactly as an uninterrupted one.

The settings are a curriculum stage's (`flows.curriculum.Stage`, which documents each field);
`flows.curriculum.mixture.dynamic_mixture` builds the hook from a stage and its items.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, kw_only=True)
class MixtureSettings:
    """Named as the curriculum stage's fields, which the stage passes on by name."""

    mixture: Mapping[str, float]  # mixture key -> configured weight w_k
    dynamic_weights: bool  # False: every key keeps w_k (difficulty may still rise)
    weight_floor: float
    pass_rate_steps: int
    raise_difficulty_above: float | None


def learnability(p: float) -> float:
    """4p(1-p): 1 at p = 0.5, 0 at p = 0 or 1."""
    return 4.0 * p * (1.0 - p)


class DynamicMixture:
    """The step hook. ``keys[i]`` and ``levels[i]`` are the mixture key and difficulty (None: unknown) of
    the pool's item i."""

    def __init__(self, settings: MixtureSettings, keys: Sequence[str], levels: Sequence[float | None]):
        self.settings = settings
        self.keys = [str(key) for key in keys]
        self.levels = list(levels)
        self.recent: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=settings.pass_rate_steps))
        self.min_level: dict[str, float | None] = {k: None for k in settings.mixture}
        self.domain_scale: dict[str, float] = {}  # lowered by the length-bias alarm (lower_weight)

    # -- the hook --------------------------------------------------------------------------------------

    def __call__(self, trainer, batch) -> dict[str, float]:
        per_key: dict[str, list[float]] = defaultdict(list)
        for index, reward in zip(batch.all_indices, batch.all_rewards, strict=True):
            per_key[self.keys[index]].append(min(max(reward, 0.0), 1.0))
        metrics: dict[str, float] = {}
        for key, rewards in per_key.items():
            self.recent[key].append(float(np.mean(rewards)))
            metrics[f"pass/{key}"] = float(np.mean(rewards))
        self._maybe_raise_levels()
        weights = self.item_weights()
        trainer.pool.set_weights(weights)  # takes effect from the next step's sampling
        share = self.key_weights()
        total = sum(share.values()) or 1.0
        metrics |= {f"weight/{k}": w / total for k, w in share.items()}
        metrics |= {f"level/{k}": v for k, v in self.min_level.items() if v is not None}
        return metrics

    # -- weights ---------------------------------------------------------------------------------------

    def pass_rate(self, key: str) -> float | None:
        recent = self.recent.get(key)
        return float(np.mean(recent)) if recent else None

    def key_weights(self) -> dict[str, float]:
        floor = self.settings.weight_floor
        out = {}
        for key, w in self.settings.mixture.items():
            p = self.pass_rate(key) if self.settings.dynamic_weights else None
            out[key] = w if p is None else w * (floor + (1.0 - floor) * learnability(p))
            out[key] *= self.domain_scale.get(key.split("/")[0], 1.0)
        return out

    def scale_domain(self, domain: str, factor: float) -> None:
        """Multiply a domain's weight from the next step on (e.g. a judge found length-seeking)."""
        self.domain_scale[domain] = self.domain_scale.get(domain, 1.0) * factor

    def active(self, i: int) -> bool:
        level, floor = self.levels[i], self.min_level.get(self.keys[i])
        return floor is None or level is None or level >= floor

    def item_weights(self) -> list[float]:
        counts: dict[str, int] = defaultdict(int)
        for i, key in enumerate(self.keys):
            counts[key] += self.active(i)
        share = self.key_weights()
        return [share[k] / counts[k] if self.active(i) else 0.0 for i, k in enumerate(self.keys)]

    def _maybe_raise_levels(self) -> None:
        threshold = self.settings.raise_difficulty_above
        if threshold is None:
            return
        for key in self.settings.mixture:
            recent = self.recent[key]
            if len(recent) < self.settings.pass_rate_steps or float(np.mean(recent)) <= threshold:
                continue
            present = sorted(
                {lv for k, lv in zip(self.keys, self.levels, strict=True) if k == key and lv is not None}
            )
            current = self.min_level[key] if self.min_level[key] is not None else (present or [None])[0]
            harder = [lv for lv in present if current is not None and lv > current]
            if harder:
                self.min_level[key] = harder[0]
                recent.clear()  # the pass rate at the new level is measured afresh

    # -- checkpoints -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "recent": {k: list(v) for k, v in self.recent.items()},
            "min_level": dict(self.min_level),
            "domain_scale": dict(self.domain_scale),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.recent.clear()
        for key, values in state["recent"].items():
            self.recent[key].extend(values)
        self.min_level = dict(state["min_level"])
        self.domain_scale = dict(state.get("domain_scale", {}))
