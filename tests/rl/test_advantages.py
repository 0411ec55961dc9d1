from __future__ import annotations

import pytest
import torch

from m1model.rl.advantages import group_advantages, informative_groups, overlong_penalty


def test_group_advantages_hand_values():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [3.0, 1.0, 2.0, 2.0]])
    a = group_advantages(rewards)
    s = (4 * 0.25 / 3) ** 0.5  # unbiased std of [1, 0, 0, 1]
    assert a[0].tolist() == pytest.approx([0.5 / s, -0.5 / s, -0.5 / s, 0.5 / s], rel=1e-5)
    assert a[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # equal rewards: zero, not NaN
    assert a[2].sum().item() == pytest.approx(0.0, abs=1e-6)
    assert group_advantages(rewards, normalize_std=False)[2].tolist() == pytest.approx([1.0, -1.0, 0.0, 0.0])


def test_group_advantages_shape_error():
    with pytest.raises(ValueError, match="G >= 2"):
        group_advantages(torch.ones(3, 1))


def test_informative_groups():
    rewards = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.25]])
    assert informative_groups(rewards).tolist() == [False, True, False, True]


def test_overlong_penalty_ramp():
    lengths = torch.tensor([5, 6, 8, 10, 12])
    assert overlong_penalty(lengths, max_len=10, cache_len=4).tolist() == [0.0, 0.0, -0.5, -1.0, -1.0]
    with pytest.raises(ValueError):
        overlong_penalty(lengths, max_len=4, cache_len=4)
