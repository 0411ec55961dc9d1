"""What the algorithms experiment compares (its arms) and at what size.

Algorithm arms, each with its public defaults:

- ``grpo``: PPO's clipped surrogate with eps = 0.2 on both sides, sample-level mean (Eq. 1), no dynamic
  sampling (GRPO as published samples once and keeps every group);
- ``dapo``: clip-higher (0.2 / 0.28), token-level normalisation and dynamic sampling (arXiv:2503.14476);
- ``cispo``: the clipped IS weight of Eq. 4-5 with no lower bound (eps_is_low = 1e6, as the paper) and
  the upper bound eps_is_high = 2.0 (the weight is capped at 3; the paper tunes only this bound and does
  not publish its value), with dynamic sampling as the paper uses.

Section 5's stability fixes, each alone on top of CISPO so that its effect is measured in the same
harness: the combined sample-level loss with token-level normalisation (``LossConfig.sample_level``),
a lower gradient-clipping threshold, and a lower eps_is_high for the last third of the run ("late in a
stage"). The paper used them together, against pattern collapse in long generation windows; at this
size they can only show whether they cost learning speed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from flows.config import TrainConfig
from m1model.rl.losses import LossConfig

UPDATES_PER_BATCH = 16  # the paper's off-policy updates per generation batch (section 3.1)
BASELINE = "dapo"  # "steps to reach" is measured against DAPO's final reward (the paper's claim)


@dataclass(frozen=True)
class Arm:
    name: str
    algorithm: Literal["cispo", "grpo", "dapo"]
    loss: LossConfig = field(default_factory=LossConfig)
    dynamic_sampling: bool = True
    grad_clip: float = 1.0
    late_eps_is_high: float | None = None  # from `late_from` of the steps on
    kind: Literal["algorithm", "stability"] = "algorithm"

    def describe(self) -> str:
        c = self.loss
        if self.algorithm == "grpo":
            text = f"clip {c.eps_low:g} both sides, sample-level mean"
        elif self.algorithm == "dapo":
            text = f"clip {c.eps_low:g}/{c.eps_high:g}, token-level"
        else:
            text = f"IS weight <= {1 + c.eps_is_high:g}, no lower bound, token-level"
        text += ", dynamic sampling" if self.dynamic_sampling else ", no dynamic sampling"
        if c.sample_level:
            text += f", sample-level mix {c.sample_level:g}"
        if self.grad_clip != 1.0:
            text += f", grad clip {self.grad_clip:g}"
        if self.late_eps_is_high is not None:
            text += f", IS weight <= {1 + self.late_eps_is_high:g} in the last third"
        return text


CISPO_LOSS = LossConfig(eps_is_low=1e6, eps_is_high=2.0)

ARMS: tuple[Arm, ...] = (
    Arm("grpo", "grpo", LossConfig(eps_low=0.2, eps_high=0.2), dynamic_sampling=False),
    Arm("dapo", "dapo", LossConfig(eps_low=0.2, eps_high=0.28)),
    Arm("cispo", "cispo", CISPO_LOSS),
    Arm(
        "cispo+sample-level",
        "cispo",
        LossConfig(eps_is_low=1e6, eps_is_high=2.0, sample_level=0.5),
        kind="stability",
    ),
    Arm("cispo+grad-clip-0.1", "cispo", CISPO_LOSS, grad_clip=0.1, kind="stability"),
    Arm("cispo+late-eps-is", "cispo", CISPO_LOSS, late_eps_is_high=0.5, kind="stability"),
)


@dataclass(frozen=True)
class Size:
    """The experiment's scale; `FULL` fits in 30 minutes on 2 cores, `QUICK` in seconds for CI."""

    n_math: int  # synthetic math problems generated before curation
    logic_per_task: int  # puzzles per logic task
    heldout_share: float
    vocab_size: int
    sft_steps: int
    sft_batch: int
    steps: int  # RL steps (generation batches) per run
    seeds: int
    prompts_per_step: int
    group_size: int
    updates_per_batch: int
    max_new_tokens: int
    lr: float
    workers: int  # runs in parallel, one torch thread each
    late_from: float = 2 / 3  # share of the steps after which late_eps_is_high applies

    def describe(self) -> str:
        return (
            f"{self.steps} RL steps x {self.seeds} seeds per arm; each step {self.prompts_per_step} prompts x "
            f"{self.group_size} responses of at most {self.max_new_tokens} tokens, "
            f"{self.updates_per_batch} off-policy updates per generation batch, AdamW lr {self.lr:g}; "
            f"one shared SFT warm start of {self.sft_steps} steps (batch {self.sft_batch}); "
            f"{self.workers} runs in parallel"
        )


FULL = Size(
    n_math=400,
    logic_per_task=60,
    heldout_share=0.2,
    vocab_size=512,
    sft_steps=400,
    sft_batch=16,
    steps=30,
    seeds=3,
    prompts_per_step=16,
    group_size=8,
    updates_per_batch=UPDATES_PER_BATCH,
    max_new_tokens=16,
    lr=TrainConfig().rl_lr,  # the pipeline's RL learning rate for this model (2e-3 made every arm's reward fall)
    workers=2,
)
QUICK = Size(
    n_math=40,
    logic_per_task=6,
    heldout_share=0.2,
    vocab_size=300,
    sft_steps=8,
    sft_batch=8,
    steps=2,
    seeds=2,
    prompts_per_step=2,
    group_size=4,
    updates_per_batch=4,
    max_new_tokens=6,
    lr=2e-3,
    workers=2,
)
