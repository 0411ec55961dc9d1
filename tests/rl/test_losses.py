"""CISPO / GRPO / DAPO losses against hand-computed values and the paper's gradient claims."""

from __future__ import annotations

import math

import pytest
import torch

from m1model.rl.losses import LossConfig, policy_loss, token_level_weights

# Two responses of one group; the second has one padding token.
# Ratios r = pi/pi_old: 2 (first token), 1, 1.  Advantages +1 and -1.
LOGP = torch.tensor([[math.log(0.5), math.log(0.25)], [math.log(0.8), 0.0]])
OLD = torch.tensor([[math.log(0.25), math.log(0.25)], [math.log(0.8), 0.0]])
MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
ADV = torch.tensor([1.0, -1.0])


def test_cispo_hand_value():
    loss, m = policy_loss("cispo", LOGP, OLD, ADV, MASK, LossConfig(eps_is_high=0.5))
    # sg(clip(2, -inf, 1.5)) = 1.5; token-level normalisation over the group's 3 tokens.
    expected = -(1.5 * math.log(0.5) + 1.0 * math.log(0.25) - 1.0 * math.log(0.8)) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert m["clip_fraction"] == pytest.approx(1 / 3)
    assert m["masked_fraction"] == 0.0
    assert m["is_weight_mean"] == pytest.approx((1.5 + 1 + 1) / 3)
    assert m["ratio_max"] == pytest.approx(2.0)


def test_grpo_hand_value():
    loss, m = policy_loss("grpo", LOGP, OLD, ADV, MASK, LossConfig(eps_low=0.2))
    # min(2*1, 1.2*1) = 1.2 and 1*1 -> response mean 1.1; second response -1; mean over responses.
    assert loss.item() == pytest.approx(-(1.1 - 1.0) / 2, rel=1e-6)
    assert m["clip_fraction"] == pytest.approx(1 / 3)
    assert m["masked_fraction"] == pytest.approx(1 / 3)


def test_dapo_hand_value():
    loss, _ = policy_loss("dapo", LOGP, OLD, ADV, MASK, LossConfig(eps_low=0.2, eps_high=0.28))
    # clip-higher: min(2, 1.28) = 1.28; token-level: (1.28 + 1 - 1) / 3.
    assert loss.item() == pytest.approx(-(1.28 + 1 - 1) / 3, rel=1e-6)


def test_approx_kl_is_k3():
    _, m = policy_loss("cispo", LOGP, OLD, ADV, MASK)
    k3 = (2 - 1 - math.log(2)) / 3
    assert m["approx_kl"] == pytest.approx(k3, rel=1e-6)


def _grad_wrt_logp(name: str, cfg: LossConfig, logp: torch.Tensor, old: torch.Tensor, adv, mask):
    leaf = logp.clone().requires_grad_(True)
    loss, _ = policy_loss(name, leaf, old, adv, mask, cfg)
    (g,) = torch.autograd.grad(loss, leaf)
    return g


def test_cispo_gradient_is_clipped_weight_times_advantage_times_grad_logp():
    """d/dtheta of Eq. 4 is -sg(r_hat) A grad log pi / sum|o_i| for every token, through a real softmax policy."""
    torch.manual_seed(0)
    B, T, V = 3, 5, 7
    theta = torch.randn(B, T, V, requires_grad=True)
    tokens = torch.randint(0, V, (B, T))
    old = torch.log_softmax(torch.randn(B, T, V), -1).gather(-1, tokens[..., None])[..., 0]
    mask = torch.ones(B, T)
    mask[1, 3:] = 0
    adv = torch.tensor([1.0, -0.5, 2.0])
    cfg = LossConfig(eps_is_high=0.3)

    logp = torch.log_softmax(theta, -1).gather(-1, tokens[..., None])[..., 0]
    loss, _ = policy_loss("cispo", logp, old, adv, mask, cfg)
    (auto,) = torch.autograd.grad(loss, theta, retain_graph=True)

    r_hat = torch.exp(logp.detach() - old).clamp(max=1.3)
    manual = torch.zeros_like(theta)
    for b in range(B):
        for t in range(T):
            if mask[b, t]:
                (g,) = torch.autograd.grad(logp[b, t], theta, retain_graph=True)
                manual -= r_hat[b, t] * adv[b] * g / mask.sum()
    assert torch.allclose(auto, manual, atol=1e-6)


def test_cispo_keeps_gradient_of_high_ratio_tokens_that_ppo_drops():
    # Token 0 of response 0 has r = 1.5 > 1 + eps with A > 0: PPO/GRPO and DAPO clip it out.
    logp = torch.tensor([[math.log(0.6), math.log(0.3)]])
    old = torch.tensor([[math.log(0.4), math.log(0.3)]])
    adv, mask = torch.tensor([1.0]), torch.ones(1, 2)
    cfg = LossConfig(eps_low=0.2, eps_high=0.28, eps_is_high=0.2)
    for name in ("grpo", "dapo"):
        g = _grad_wrt_logp(name, cfg, logp, old, adv, mask)
        assert g[0, 0] == 0.0, name
        assert g[0, 1] != 0.0, name
    g = _grad_wrt_logp("cispo", cfg, logp, old, adv, mask)
    assert g[0, 0].item() == pytest.approx(-1.2 * 1.0 / 2)  # weight clipped to 1 + eps_is_high, kept
    assert g[0, 1].item() == pytest.approx(-1.0 / 2)
    # The unified form (Eq. 6-7) with the PPO mask drops it again, like PPO.
    g = _grad_wrt_logp("cispo", LossConfig(eps_high=0.28, unified_mask=True), logp, old, adv, mask)
    assert g[0, 0] == 0.0


def test_unified_mask_matches_eq7_cases():
    # r > 1+eps_high with A>0 masked; r < 1-eps_low with A<0 masked; the opposite signs are kept.
    logp = torch.log(torch.tensor([[0.9, 0.1], [0.9, 0.1]]))
    old = torch.log(torch.tensor([[0.5, 0.5], [0.5, 0.5]]))  # r = 1.8, 0.2
    adv = torch.tensor([1.0, -1.0])
    _, m = policy_loss("cispo", logp, old, adv, torch.ones(2, 2), LossConfig(unified_mask=True))
    assert m["masked_fraction"] == pytest.approx(2 / 4)
    g = _grad_wrt_logp("cispo", LossConfig(unified_mask=True), logp, old, adv, torch.ones(2, 2))
    assert (g == 0).tolist() == [[True, False], [False, True]]


def test_cispo_without_clipping_is_reinforce_with_is():
    """Mask all ones, no clipping, equal lengths: Eq. 4 equals the mean over responses of Eq. 3."""
    torch.manual_seed(1)
    G, T = 4, 6
    logp = (torch.randn(G, T) - 2).requires_grad_(True)
    old = torch.randn(G, T) - 2
    adv = torch.randn(G)
    cfg = LossConfig(eps_is_low=1e9, eps_is_high=1e9)
    loss, _ = policy_loss("cispo", logp, old, adv, torch.ones(G, T), cfg)
    r = torch.exp(logp.detach() - old)
    reinforce = -((r * adv[:, None] * logp).sum(1) / T).mean()  # Eq. 3, sg on r
    assert loss.item() == pytest.approx(reinforce.item(), rel=1e-5)
    (g1,) = torch.autograd.grad(loss, logp)
    (g2,) = torch.autograd.grad(reinforce, logp)
    assert torch.allclose(g1, g2, atol=1e-7)


def test_token_level_normalisation_is_per_group():
    torch.manual_seed(2)
    logp = torch.randn(4, 5) - 2
    old = logp + 0.1 * torch.randn(4, 5)
    adv = torch.randn(4)
    mask = torch.tensor(
        [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.float32
    )
    groups = torch.tensor([7, 7, 3, 3])
    both, _ = policy_loss("cispo", logp, old, adv, mask, group_index=groups)
    g1, _ = policy_loss("cispo", logp[:2], old[:2], adv[:2], mask[:2])
    g2, _ = policy_loss("cispo", logp[2:], old[2:], adv[2:], mask[2:])
    assert both.item() == pytest.approx(((g1 + g2) / 2).item(), rel=1e-6)
    w = token_level_weights(mask, groups)
    assert w[0].sum().item() == pytest.approx(5 / 7 / 2)


def test_grpo_kl_to_reference():
    cfg = LossConfig(kl_coef=0.5)
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss("grpo", LOGP, OLD, ADV, MASK, cfg)
    same, m = policy_loss("grpo", LOGP, OLD, ADV, MASK, cfg, ref_logp=LOGP)
    assert m["kl_ref"] == pytest.approx(0.0)
    plain, _ = policy_loss("grpo", LOGP, OLD, ADV, MASK)
    assert same.item() == pytest.approx(plain.item())
    ref = LOGP + 0.3
    with_kl, m = policy_loss("grpo", LOGP, OLD, ADV, MASK, cfg, ref_logp=ref)
    k3 = math.exp(0.3) - 0.3 - 1
    assert m["kl_ref"] == pytest.approx(k3, rel=1e-5)
    assert with_kl.item() == pytest.approx(plain.item() + 0.5 * k3, rel=1e-5)


def test_entropy_metric_and_errors():
    ent = torch.tensor([[1.0, 3.0], [2.0, 100.0]])
    _, m = policy_loss("dapo", LOGP, OLD, ADV, MASK, entropy=ent)
    assert m["entropy"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="unknown RL algorithm"):
        policy_loss("ppo2", LOGP, OLD, ADV, MASK)
    with pytest.raises(ValueError, match="same shape"):
        policy_loss("cispo", LOGP, OLD[:, :1], ADV, MASK)


def test_sample_level_mix_is_section_5s_combined_loss():
    # The same tokens weighted half token-level (1/3 each) and half sample-level (1/2 per response, split
    # over its tokens): response 1's tokens 1/3*1/2 + 1/4*1/2 each, response 2's token 1/3*1/2 + 1/2*1/2.
    cfg = LossConfig(eps_is_high=0.5, sample_level=0.5)
    loss, _ = policy_loss("cispo", LOGP, OLD, ADV, MASK, cfg)
    w1, w2 = (1 / 3 + 1 / 4) / 2, (1 / 3 + 1 / 2) / 2
    expected = -(w1 * (1.5 * math.log(0.5) + math.log(0.25)) - w2 * math.log(0.8))
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    # lambda = 1 is Eq. 1's sample-level mean; GRPO (already sample-level) is unchanged by any lambda.
    full, _ = policy_loss("cispo", LOGP, OLD, ADV, MASK, LossConfig(eps_is_high=0.5, sample_level=1.0))
    assert full.item() == pytest.approx(-((1.5 * math.log(0.5) + math.log(0.25)) / 2 - math.log(0.8)) / 2)
    grpo = [policy_loss("grpo", LOGP, OLD, ADV, MASK, LossConfig(sample_level=s))[0].item() for s in (0, 0.7)]
    assert grpo[0] == pytest.approx(grpo[1])
    with pytest.raises(ValueError, match="sample_level"):
        LossConfig(sample_level=1.5)
