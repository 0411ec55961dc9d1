"""What the algorithms experiment compares (its arms) and at what size.

Every arm starts from the same SFT warm start and trains with the pipeline's own settings (one
`TrainConfig`, translated by `flows.curriculum.settings.rl_config` as every stage's is); an arm only
overrides what defines it. The baselines a sceptic asks for come first:

- ``sft``: supervised fine-tuning continued on the gold answers, with as many optimiser steps as an RL
  arm takes (steps x updates per batch): what the same compute buys without any sampling;
- ``rft``: rejection-sampling fine-tuning (expert iteration, online): sample G responses per prompt as
  the RL arms do, keep the verified ones, imitate them (`m1model.rl.losses`, ``rft``). The simplest RL.

Algorithm arms, each with its public defaults:

- ``grpo``: PPO's clipped surrogate with eps = 0.2 on both sides, sample-level mean (Eq. 1), no dynamic
  sampling (GRPO as published samples once and keeps every group);
- ``dapo``: clip-higher (0.2 / 0.28), token-level normalisation and dynamic sampling (arXiv:2503.14476);
- ``cispo``: the clipped IS weight of Eq. 4-5 with no lower bound (eps_is_low = 1e6, as the paper) and
  the upper bound eps_is_high = 2.0 (the weight is capped at 3; the paper tunes only this bound and does
  not publish its value), with dynamic sampling as the paper uses.

Section 5's stability fixes, each alone on top of CISPO so that its effect is measured in the same
harness: the combined sample-level loss with token-level normalisation (``sample_level``), a lower
gradient-clipping threshold, and a lower eps_is_high for the last third of the run ("late in a stage").
The paper used them together, against pattern collapse in long generation windows; at this size they can
only show whether they cost learning.

A diagnostic arm runs only when named: ``cispo+positive-only`` scales CISPO's negative advantages by 0
(``negative_weight``), to measure what pushing wrong answers down does to held-out accuracy; against
``rft`` it leaves only the two losses' weighting of the right answers different.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flows.config import TrainConfig

BASELINE = "dapo"  # "steps to reach" is measured against DAPO's final held-out accuracy (the paper's claim)


@dataclass(frozen=True)
class Arm:
    name: str
    method: Literal["sft", "rl"]
    train: Mapping[str, Any] = field(default_factory=dict)  # TrainConfig fields this arm sets
    late: Mapping[str, Any] = field(default_factory=dict)  # ... and from `Size.late_from` of the steps on
    kind: Literal["baseline", "algorithm", "stability", "diagnostic"] = "algorithm"

    def config(self, base: TrainConfig, seed: int, *, late: bool = False) -> TrainConfig:
        """The arm's TrainConfig for one seed (validated: a typo in an arm fails, never trains)."""
        fields = base.model_dump() | dict(self.train) | (dict(self.late) if late else {}) | {"seed": seed}
        return TrainConfig.model_validate(fields)

    def describe(self) -> str:
        t = dict(self.train)
        if self.method == "sft":
            return "SFT continued on the gold answers, as many optimiser steps as an RL arm"
        algorithm = t.get("algorithm", "cispo")
        if algorithm == "rft":
            text = "keep the verified of G samples, imitate them"
        elif algorithm == "grpo":
            text = f"clip {t['eps_low']:g} both sides, sample-level mean"
        elif algorithm == "dapo":
            text = f"clip {t['eps_low']:g}/{t['eps_high']:g}, token-level"
        else:
            text = f"IS weight <= {1 + t['eps_is_high']:g}, no lower bound, token-level"
        text += ", dynamic sampling" if t.get("dynamic_sampling", True) else ", no dynamic sampling"
        if t.get("sample_level"):
            text += f", sample-level mix {t['sample_level']:g}"
        if "grad_clip" in t:
            text += f", grad clip {t['grad_clip']:g}"
        if "eps_is_high" in self.late:
            text += f", IS weight <= {1 + self.late['eps_is_high']:g} in the last third"
        if t.get("negative_weight", 1.0) != 1.0:
            text += f", negative advantages x {t['negative_weight']:g}"
        return text


CISPO = dict({"algorithm": "cispo", "eps_is_low": 1e6, "eps_is_high": 2.0, "dynamic_sampling": True})

ARMS: tuple[Arm, ...] = (
    Arm("sft", "sft", kind="baseline"),
    Arm("rft", "rl", dict({"algorithm": "rft", "dynamic_sampling": False}), kind="baseline"),
    Arm(
        "grpo",
        "rl",
        dict({"algorithm": "grpo", "eps_low": 0.2, "eps_high": 0.2, "dynamic_sampling": False}),
    ),
    Arm(
        "dapo",
        "rl",
        dict({"algorithm": "dapo", "eps_low": 0.2, "eps_high": 0.28, "dynamic_sampling": True}),
    ),
    Arm("cispo", "rl", CISPO),
    Arm("cispo+sample-level", "rl", dict({**CISPO, "sample_level": 0.5}), kind="stability"),
    Arm("cispo+grad-clip-0.1", "rl", dict({**CISPO, "grad_clip": 0.1}), kind="stability"),
    Arm("cispo+late-eps-is", "rl", CISPO, late=dict({"eps_is_high": 0.5}), kind="stability"),
)
# Run only when named (`--arms`): CISPO with its negative half switched off, between CISPO (same weights,
# plus the negative half) and RFT (the verified samples alone, weighted alike).
DIAGNOSTIC_ARMS: tuple[Arm, ...] = (
    Arm("cispo+positive-only", "rl", dict({**CISPO, "negative_weight": 0.0}), kind="diagnostic"),
)
ARM_NAMES = tuple(a.name for a in ARMS + DIAGNOSTIC_ARMS)


def select(names: str | None) -> tuple[Arm, ...]:
    """The arms named in a comma-separated list (the default arms for None), in the table's order."""
    if not names:
        return ARMS
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = sorted(set(wanted) - set(ARM_NAMES))
    if unknown:
        raise ValueError(f"unknown arms {', '.join(unknown)} (known: {', '.join(ARM_NAMES)})")
    return tuple(a for a in ARMS + DIAGNOSTIC_ARMS if a.name in wanted)


@dataclass(frozen=True)
class Size:
    """The experiment's scale. ``train`` holds the TrainConfig fields every arm shares; the rest of
    TrainConfig is the pipeline's default."""

    n_math: int  # synthetic math problems generated before curation
    logic_per_task: int  # puzzles per logic task
    heldout_fraction: float  # share of the items held out (by the pipeline's own id-hash split)
    vocab_size: int
    steps: int  # RL steps (generation batches) per run
    seeds: int
    eval_every: int  # held-out evaluation every N steps (and at the end)
    workers: int  # runs in parallel, one torch thread each
    train: Mapping[str, Any]
    late_from: float = 2 / 3  # share of the steps after which an arm's `late` settings apply
    eval_samples: int = 8  # answers per held-out item sampled at temperature 1 at the end (mean@k); 0: none
    max_difficulty: float | None = None  # keep items up to this metadata.difficulty

    def base(self) -> TrainConfig:
        return TrainConfig.model_validate(TrainConfig().model_dump() | dict(self.train))

    @property
    def optimizer_steps(self) -> int:
        """Optimiser steps of one RL run: what the SFT arm is given too."""
        return self.steps * self.base().updates_per_batch

    def describe(self) -> str:
        t = self.base()
        return (
            f"{self.steps} RL steps x {self.seeds} seeds per arm; each step {t.prompts_per_step} prompts x "
            f"{t.group_size} responses of at most {t.max_new_tokens} tokens, {t.updates_per_batch} "
            f"off-policy updates per generation batch ({self.optimizer_steps} optimiser steps per run), "
            f"AdamW lr {t.rl_lr:g}; one shared SFT warm start of {t.sft_steps} steps (batch {t.batch_size}, "
            f"lr {t.sft_lr:g}); held-out greedy evaluation every {self.eval_every} steps"
            + (f", and {self.eval_samples} sampled answers per item at the end" if self.eval_samples else "")
            + f"; {self.workers} runs in parallel"
        )


# Sized by the ladder in flows/experiments/README.md: enough distinct items that the warm start learns
# rather than memorises, a warm start past the point where copying a stated number appears (~1000 SFT
# steps at width 64), the difficulty band the model can reach, and minibatches of 4 groups per update.
# 64 prompts in the paper's 16 updates per batch: at 16 prompts in 4 updates the held-out curves were
# still rising at step 40 (CISPO +0.067) and 80 steps gave +0.088; 64 x 16 gives +0.127 in 28.5 min.
FULL = Size(
    n_math=3000,
    logic_per_task=300,
    heldout_fraction=0.1,
    vocab_size=512,
    steps=40,
    seeds=3,
    eval_every=5,
    workers=2,
    max_difficulty=3,
    train=dict(
        {
            "sft_steps": 1500,
            "prompts_per_step": 64,
            "group_size": 8,
            "updates_per_batch": 16,
            "max_new_tokens": 16,
        }
    ),
)
QUICK = Size(
    n_math=40,
    logic_per_task=6,
    heldout_fraction=0.2,
    vocab_size=300,
    steps=2,
    seeds=2,
    eval_every=1,
    workers=2,
    eval_samples=2,
    train=dict(
        {
            "sft_steps": 8,
            "batch_size": 8,
            "prompts_per_step": 2,
            "group_size": 4,
            "updates_per_batch": 4,
            "max_new_tokens": 6,
        }
    ),
)
