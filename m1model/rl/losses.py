"""Policy-gradient losses for LLM RL behind one interface: CISPO, GRPO and DAPO.

All three see the same tensors, so they can be swapped (and compared) on the same run:

- ``logp``      [B, T] log pi_theta of each response token (carries the gradient),
- ``old_logp``  [B, T] log pi_theta_old of the same tokens (from the rollout engine, no gradient),
- ``advantages`` [B] per response (broadcast over its tokens) or [B, T] per token,
- ``mask``      [B, T] 1 on response tokens, 0 on prompt and padding,
- ``group_index`` [B] which prompt group each response belongs to (default: one group).

Objectives (MiniMax-M1, arXiv:2506.13585, section 3.1); the loss is the negated objective:

- ``cispo``: Eq. 4-5. sg(clip(r, 1-eps_is_low, 1+eps_is_high)) * A * log pi, normalised by all tokens of
  the group (1 / sum_i |o_i|). Clipping the IS *weight* instead of the update keeps the gradient of every
  token, including the rare high-ratio "fork" tokens that PPO's trust region drops. With
  ``unified_mask=True`` it is Eq. 6-7: the PPO trust-region mask M_{i,t} is applied on top.
- ``grpo``: Eq. 1-2. PPO's clipped surrogate min(r A, clip(r, 1-eps, 1+eps) A) with eps = eps_low on both
  sides, averaged per response (1/|o_i|) then over responses; optional k3 KL to a reference policy.
- ``dapo``: DAPO (arXiv:2503.14476). The clipped surrogate with clip-higher (1-eps_low, 1+eps_high) and
  the token-level normalisation of Eq. 4.
- ``rft``: rejection-sampling fine-tuning (expert iteration, online): the negative log-likelihood of the
  verified responses alone, token-level per group. The simplest RL baseline: its "advantages" are the
  0/1 verdicts (`m1model.rl.rollout.collate` with ``verified_only``), with no baseline, no IS weight and
  no clipping, so every verified response is imitated and nothing else is pushed down.

Several groups in one batch: the objective is the mean over groups of each group's normalised sum,
i.e. the expectation over prompts q in Eq. 1 and Eq. 4.

Section 5's fix for pattern collapse late in a length window, ``sample_level`` = lambda: negative responses
grow longer than positive ones, so under token-level normalisation (Eq. 4) they carry a share of the
gradient proportional to their length. The paper "adopted the combined sample-level loss and token-level
normalisation"; here that is the convex mix of the two weightings,

    w_{i,t} = (1 - lambda) / sum_i |o_i|  +  lambda / (G |o_i|),

so each response keeps a floor of 1/G of the weight whatever its length while long responses still count
per token. lambda = 0 is Eq. 4 (the default), lambda = 1 is Eq. 1's sample-level mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor

Algorithm = Literal["cispo", "grpo", "dapo", "rft"]
ALGORITHMS: tuple[str, ...] = get_args(Algorithm)


@dataclass(frozen=True)
class LossConfig:
    eps_low: float = 0.2  # trust region below 1 (GRPO uses it on both sides)
    eps_high: float = 0.28  # DAPO's clip-higher; also the upper edge of CISPO's unified mask
    eps_is_low: float = 1e6  # CISPO: the paper sets no lower bound on the IS weight
    eps_is_high: float = 2.0  # CISPO: the only bound the paper tunes
    unified_mask: bool = False  # CISPO with the token mask M of Eq. 7
    kl_coef: float = 0.0  # GRPO's beta; off by default, as in CISPO and DAPO
    sample_level: float = 0.0  # section 5: weight of the sample-level mean mixed into token-level weights
    # Scales negative advantages (1: the algorithms as published; 0: positive reinforcement alone), to
    # measure what pushing wrong answers down costs or buys (flows/experiments/README.md). Not for rft.
    negative_weight: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_level <= 1.0:
            raise ValueError(f"sample_level must be in [0, 1], got {self.sample_level}")
        if self.negative_weight < 0:
            raise ValueError(f"negative_weight must be >= 0, got {self.negative_weight}")


def trust_region_mask(ratio: Tensor, advantages: Tensor, eps_low: float, eps_high: float) -> Tensor:
    """Eq. 7: 0 where PPO's clipped surrogate has zero gradient, 1 elsewhere."""
    dropped = ((advantages > 0) & (ratio > 1 + eps_high)) | ((advantages < 0) & (ratio < 1 - eps_low))
    return (~dropped).to(ratio.dtype)


def _group_ids(group_index: Tensor | None, batch: int, device: torch.device) -> tuple[Tensor, int]:
    if group_index is None:
        return torch.zeros(batch, dtype=torch.long, device=device), 1
    ids, inverse = torch.unique(group_index, return_inverse=True)
    return inverse, ids.numel()


def token_level_weights(mask: Tensor, group_index: Tensor | None = None) -> Tensor:
    """Weights w with sum(w * x) = mean over groups of sum_{i,t} x_{i,t} / sum_i |o_i| (Eq. 4)."""
    mask = mask.to(torch.float32)
    groups, n_groups = _group_ids(group_index, mask.shape[0], mask.device)
    tokens = torch.zeros(n_groups, device=mask.device).index_add_(0, groups, mask.sum(1))
    return mask / tokens.clamp_min(1.0)[groups, None] / n_groups


def sequence_level_weights(mask: Tensor, group_index: Tensor | None = None) -> Tensor:
    """Weights w with sum(w * x) = mean over groups of mean_i (1/|o_i|) sum_t x_{i,t} (Eq. 1)."""
    mask = mask.to(torch.float32)
    groups, n_groups = _group_ids(group_index, mask.shape[0], mask.device)
    per_response = mask / mask.sum(1, keepdim=True).clamp_min(1.0)
    sizes = torch.zeros(n_groups, device=mask.device).index_add_(
        0, groups, torch.ones_like(groups, dtype=torch.float32)
    )
    return per_response / sizes[groups, None] / n_groups


def _masked_mean(x: Tensor, mask: Tensor) -> float:
    return float((x * mask).sum() / mask.sum().clamp_min(1.0))


def policy_loss(
    name: str,
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    cfg: LossConfig = LossConfig(),
    *,
    group_index: Tensor | None = None,
    ref_logp: Tensor | None = None,
    entropy: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """The loss (to minimise) of algorithm ``name`` and its metrics.

    Metrics: ``clip_fraction`` (tokens whose ratio left the algorithm's clip range: the IS weight for
    CISPO, the surrogate for GRPO/DAPO), ``masked_fraction`` (tokens whose gradient is dropped: always 0
    for plain CISPO), ``is_weight_mean`` (the weight that multiplies each token's gradient),
    ``ratio_mean``/``ratio_max``, ``approx_kl`` (k3 estimate of KL(pi_old || pi_theta)), and
    ``entropy`` / ``kl_ref`` when those inputs are given.
    """
    if name not in ALGORITHMS:
        raise ValueError(f"unknown RL algorithm {name!r} (known: {', '.join(ALGORITHMS)})")
    if logp.shape != old_logp.shape or logp.shape != mask.shape:
        raise ValueError(
            f"logp {tuple(logp.shape)}, old_logp {tuple(old_logp.shape)} and mask "
            f"{tuple(mask.shape)} must have the same shape"
        )
    mask = mask.to(torch.float32)
    adv = advantages.to(torch.float32)
    adv = adv[:, None].expand_as(logp) if adv.dim() == 1 else adv
    if cfg.negative_weight != 1.0:
        adv = torch.where(adv < 0, adv * cfg.negative_weight, adv)
    log_ratio = logp.float() - old_logp.float().detach()
    ratio = torch.exp(log_ratio)
    region = trust_region_mask(
        ratio.detach(), adv, cfg.eps_low, cfg.eps_high if name != "grpo" else cfg.eps_low
    )

    if name == "rft":
        verified = (adv > 0).to(torch.float32)
        per_token = verified * logp.float()
        weight = keep = verified
        clipped = torch.zeros_like(verified, dtype=torch.bool)
        weights = token_level_weights(mask * verified, group_index)
    elif name == "cispo":
        lo, hi = 1 - cfg.eps_is_low, 1 + cfg.eps_is_high
        weight = ratio.detach().clamp(lo, hi)
        per_token = weight * adv * logp.float()
        keep = region if cfg.unified_mask else torch.ones_like(region)
        per_token = per_token * keep
        clipped = (ratio.detach() < lo) | (ratio.detach() > hi)
        weights = token_level_weights(mask, group_index)
    else:
        eps_high = cfg.eps_low if name == "grpo" else cfg.eps_high
        clipped_ratio = ratio.clamp(1 - cfg.eps_low, 1 + eps_high)
        per_token = torch.minimum(ratio * adv, clipped_ratio * adv)
        weight = ratio.detach() * region
        keep = region
        clipped = (ratio.detach() < 1 - cfg.eps_low) | (ratio.detach() > 1 + eps_high)
        weights = (sequence_level_weights if name == "grpo" else token_level_weights)(mask, group_index)
    if cfg.sample_level:
        lam = cfg.sample_level
        weights = (1 - lam) * weights + lam * sequence_level_weights(mask, group_index)

    kl_ref = None
    if cfg.kl_coef:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp (log-probs of the reference policy)")
        # k3 estimator of KL(pi_theta || pi_ref), unbiased and non-negative (Schulman; used by GRPO).
        d = ref_logp.float().detach() - logp.float()
        kl_ref = torch.exp(d) - d - 1
        per_token = per_token - cfg.kl_coef * kl_ref

    loss = -(per_token * weights).sum()

    with torch.no_grad():
        lr_ = log_ratio.detach()
        metrics = {
            "clip_fraction": _masked_mean(clipped.float(), mask),
            "masked_fraction": _masked_mean(1 - keep, mask),
            "is_weight_mean": _masked_mean(weight, mask),
            "ratio_mean": _masked_mean(ratio.detach(), mask),
            "ratio_max": float(torch.where(mask > 0, ratio.detach(), 0.0).max()) if mask.any() else 1.0,
            "approx_kl": _masked_mean(torch.exp(lr_) - 1 - lr_, mask),
        }
        if entropy is not None:
            metrics["entropy"] = _masked_mean(entropy.float(), mask)
        if kl_ref is not None:
            metrics["kl_ref"] = _masked_mean(kl_ref.detach(), mask)
    return loss, metrics
