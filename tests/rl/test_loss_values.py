"""The surrogate losses at points where their value or gradient is known by hand: advantages other than
+-1, the lower clip of the PPO-style surrogate, the IS-weight metric outside the trust region, and the
sample-level mixing of Section 5 as a mean over groups, the scale on negative advantages. Plus the loss's
input errors, word for word."""

from __future__ import annotations

import pytest
import torch

from m1model.rl.losses import LossConfig, policy_loss

ONE_GROUP = torch.zeros(2, dtype=torch.long)


@pytest.mark.parametrize("name", ["grpo", "dapo"])
def test_on_policy_loss_is_minus_the_mean_advantage(name):
    """ratio 1 everywhere: both surrogates are A per token; one group of two equal-length responses."""
    logp = torch.full((2, 3), -1.0)
    adv = torch.tensor([2.0, -0.5])
    loss, _ = policy_loss(name, logp, logp.clone(), adv, torch.ones(2, 3), group_index=ONE_GROUP)
    assert float(loss) == pytest.approx(-(2.0 - 0.5) / 2)


@pytest.mark.parametrize("name", ["grpo", "dapo"])
def test_a_ratio_below_the_lower_clip_with_a_negative_advantage_gets_no_gradient(name):
    """min(r A, clip(r) A) with A < 0 and r < 1 - eps_low is the clipped term: constant in the policy."""
    old = torch.tensor([[-1.0, -1.0]])
    logp = torch.tensor([[-1.5, -1.0]], requires_grad=True)  # ratio e^-0.5 = 0.61 < 0.8, then 1
    loss, metrics = policy_loss(name, logp, old, torch.tensor([-1.5]), torch.ones(1, 2))
    loss.backward()
    assert logp.grad[0, 0] == 0.0 and logp.grad[0, 1] != 0.0
    assert metrics["clip_fraction"] == 0.5


def test_the_is_weight_metric_counts_dropped_tokens_as_zero():
    """DAPO's gradient weight is the ratio inside the trust region and 0 outside it."""
    old = torch.tensor([[-1.0, -1.0]])
    logp = torch.tensor([[-1.5, -0.9]])  # ratio 0.61 (outside, A < 0), 1.105 (inside)
    _, metrics = policy_loss("dapo", logp, old, torch.tensor([-1.0]), torch.ones(1, 2))
    assert metrics["is_weight_mean"] == pytest.approx(float(torch.exp(torch.tensor(0.1))) / 2)
    assert metrics["masked_fraction"] == 0.5


def groups_of_different_shapes():
    """Two groups: three responses of lengths 1-3, and two of lengths 4 and 2."""
    torch.manual_seed(0)
    mask = torch.zeros(5, 4)
    for row, length in enumerate([1, 2, 3, 4, 2]):
        mask[row, :length] = 1
    logp = -torch.rand(5, 4)
    old = logp + 0.1 * torch.randn(5, 4)
    adv = torch.tensor([1.0, -0.5, -0.5, 0.7, -0.7])
    return logp, old, adv, mask, torch.tensor([0, 0, 0, 1, 1])


@pytest.mark.parametrize("name", ["cispo", "dapo", "grpo"])
@pytest.mark.parametrize("sample_level", [0.5, 1.0])
def test_every_weighting_is_a_mean_over_groups(name, sample_level):
    """Eq. 4 and its sample-level mix average per-group terms: the batch's loss is the mean of the loss of
    each group alone, whatever the groups' sizes and lengths."""
    logp, old, adv, mask, group_index = groups_of_different_shapes()
    cfg = LossConfig(sample_level=sample_level)
    both, _ = policy_loss(name, logp, old, adv, mask, cfg, group_index=group_index)
    alone = [
        policy_loss(name, logp[rows], old[rows], adv[rows], mask[rows], cfg)[0]
        for rows in (slice(0, 3), slice(3, 5))
    ]
    assert float(both) == pytest.approx(float(sum(alone)) / 2, rel=1e-5)


@pytest.mark.parametrize("name", ["cispo", "dapo", "grpo"])
@pytest.mark.parametrize("weight", [0.0, 0.25])
def test_negative_weight_scales_the_negative_responses_gradient_alone(name, weight):
    """On policy (ratio 1), a response's gradient is its advantage times its token weight: the negative
    responses' gradients shrink by the weight, the positive ones' are untouched."""
    logp, old, adv, mask, group_index = groups_of_different_shapes()
    grads = []
    for cfg in (LossConfig(), LossConfig(negative_weight=weight)):
        x = old.clone().requires_grad_(True)
        policy_loss(name, x, old, adv, mask, cfg, group_index=group_index)[0].backward()
        grads.append(x.grad)
    full, scaled = grads
    negative = adv < 0
    assert torch.equal(scaled[~negative], full[~negative])
    assert torch.allclose(scaled[negative], weight * full[negative])
    assert full[negative].abs().sum() > 0


def test_input_errors_are_stated_exactly():
    logp = torch.zeros(1, 2)
    with pytest.raises(ValueError) as unknown:
        policy_loss("ppo", logp, logp, torch.zeros(1), torch.ones(1, 2))
    assert str(unknown.value) == "unknown RL algorithm 'ppo' (known: cispo, grpo, dapo, rft)"
    with pytest.raises(ValueError) as no_ref:
        policy_loss("cispo", logp, logp, torch.zeros(1), torch.ones(1, 2), LossConfig(kl_coef=0.1))
    assert str(no_ref.value) == "kl_coef > 0 needs ref_logp (log-probs of the reference policy)"
    with pytest.raises(ValueError) as negative:
        LossConfig(negative_weight=-0.5)
    assert str(negative.value) == "negative_weight must be >= 0, got -0.5"
