"""The losses and step metrics at their boundaries: a ratio exactly at a clip bound, a zero advantage,
the IS weight's lower bound, per-group token counts, the precision-mismatch statistics and the
token-weighted metric average."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from m1model.rl.advantages import group_advantages
from m1model.rl.losses import LossConfig, policy_loss, token_level_weights, trust_region_mask
from m1model.rl.trainer import _mismatch_metrics, _mismatch_sums, _weighted


def test_trust_region_keeps_ratios_exactly_at_the_bounds_and_never_drops_a_zero_advantage():
    ratio = torch.tensor([1.5, 1.5001, 0.5, 0.4999, 9.0, 0.01])
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 0.0])
    assert trust_region_mask(ratio, adv, eps_low=0.5, eps_high=0.5).tolist() == [1, 0, 1, 0, 1, 1]


def _loss(name, ratio, adv, cfg, mask=None, group_index=None):
    old = torch.zeros(1, len(ratio))
    logp = torch.log(torch.tensor([ratio])).requires_grad_()
    mask = torch.ones_like(old) if mask is None else torch.tensor([mask])
    return policy_loss(name, logp, old, torch.tensor([adv]), mask, cfg, group_index=group_index), logp


def test_cispo_weight_is_clamped_below_too_and_a_ratio_at_a_bound_is_not_clipped():
    cfg = LossConfig(eps_is_low=0.5, eps_is_high=1.0)
    ratios = [0.25, 0.5, 2.0, 3.0]
    (loss, m), logp = _loss("cispo", ratios, [1.0] * 4, cfg)
    loss.backward()
    # d loss / d logp_t = -w_t * A / tokens, with w = clamp(ratio, 0.5, 2.0), stop-gradient
    torch.testing.assert_close(logp.grad[0], -torch.tensor([0.5, 0.5, 2.0, 2.0]) / 4)
    assert m["clip_fraction"] == 0.5  # 0.25 and 3.0; the ratios at 0.5 and 2.0 are inside


def test_grpo_clips_both_sides_at_eps_low_and_dapo_reaches_eps_high():
    cfg = LossConfig(eps_low=0.2, eps_high=0.28)
    ratios = [0.8, 1.2, 1.25, 0.7]
    (_, grpo), _ = _loss("grpo", ratios, [1.0, 1.0, 1.0, -1.0], cfg)
    (_, dapo), _ = _loss("dapo", ratios, [1.0, 1.0, 1.0, -1.0], cfg)
    assert grpo["clip_fraction"] == 0.5  # 1.25 > 1.2 and 0.7 < 0.8; the bounds themselves inside
    assert dapo["clip_fraction"] == 0.25  # only 0.7: DAPO's upper bound is 1.28
    assert grpo["masked_fraction"] == 0.5 and dapo["masked_fraction"] == 0.25


def test_ratio_metrics_ignore_masked_tokens():
    cfg = LossConfig()
    (_, m), _ = _loss("cispo", [0.5, 0.25, 4.0], [1.0, 1.0, 1.0], cfg, mask=[1.0, 1.0, 0.0])
    assert m["ratio_max"] == 0.5 and m["ratio_mean"] == pytest.approx(0.375)
    (_, one), _ = _loss("cispo", [0.5, 0.25, 4.0], [1.0, 1.0, 1.0], cfg, mask=[1.0, 0.0, 0.0])
    assert one["ratio_mean"] == 0.5 and one["is_weight_mean"] == 0.5  # a mean over one token
    (_, empty), _ = _loss("cispo", [0.5], [1.0], cfg, mask=[0.0])
    assert empty["ratio_max"] == 1.0 and empty["ratio_mean"] == 0.0


def test_group_index_reaches_the_token_weights_of_each_algorithm():
    """Two groups with 1 and 3 tokens: per-group normalisation weighs each group's tokens 1/2 in all."""
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    groups = torch.tensor([0, 1])
    torch.testing.assert_close(token_level_weights(mask, groups), torch.tensor([[0.5, 0, 0], [1 / 6] * 3]))
    logp = torch.zeros(2, 3, requires_grad=True)
    for name in ("cispo", "grpo", "dapo"):
        for sample_level in (0.0, 0.5):
            cfg = LossConfig(sample_level=sample_level)
            loss, _ = policy_loss(name, logp, torch.zeros(2, 3), torch.ones(2), mask, cfg, group_index=groups)
            (grad,) = torch.autograd.grad(loss, logp)
            assert grad[0, 0].item() == pytest.approx(-0.5), (
                name,
                sample_level,
            )  # the 1-token group's weight


def test_group_advantages_divide_by_std_plus_eps():
    adv = group_advantages(torch.tensor([[1.0, 0.0], [2.0, 2.0]]), eps=0.5)
    std = math.sqrt(0.5)
    torch.testing.assert_close(adv, torch.tensor([[0.5 / (std + 0.5), -0.5 / (std + 0.5)], [0.0, 0.0]]))


def test_mismatch_metrics_are_the_mean_abs_gap_and_the_pearson_correlation():
    x = torch.tensor([-1.0, -2.0, -0.5, -3.0])
    y = torch.tensor([-1.1, -1.8, -0.6, -2.5])
    sums = _mismatch_sums(x, y).tolist()
    assert sums[0] == 4.0
    m = _mismatch_metrics(sums)
    assert m["logprob_abs_diff"] == pytest.approx(float((x - y).abs().mean()))
    assert m["logprob_corr"] == pytest.approx(float(np.corrcoef(x.numpy(), y.numpy())[0, 1]))
    one = _mismatch_metrics(_mismatch_sums(x[:1], y[:1]).tolist())
    assert one == {"logprob_abs_diff": pytest.approx(0.1)}  # one token: no correlation
    flat = _mismatch_metrics(_mismatch_sums(torch.full((3,), -1.0), y[:3]).tolist())
    assert "logprob_corr" not in flat  # a constant side has no correlation either
    assert _mismatch_metrics([0.0] * 7) == {"logprob_abs_diff": 0.0}


def test_weighted_metrics_are_token_weighted_means_and_maxima():
    rows = [({"loss": 1.0, "ratio_max": 2.0}, 1.0), ({"loss": 4.0, "ratio_max": 1.5}, 3.0)]
    assert _weighted(rows) == {"loss": pytest.approx(3.25), "ratio_max": 2.0}
    assert _weighted([({"loss": 2.0}, 0.0)]) == {"loss": 0.0}  # no tokens: a zero mean, not a division error
