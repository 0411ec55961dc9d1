"""The length-bias monitor's domain down-weighting (m1model/rl/length_bias.py `lower_domain_weight`):
through the stage's mixture hook when it has one, else on the rollout pool's weights directly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from m1model.rl.length_bias import lower_domain_weight


class _Pool:
    def __init__(self, items, weights=None):
        self.items, self.weights, self.set_calls = items, weights, []

    def set_weights(self, weights):
        self.set_calls.append(list(weights))
        self.weights = list(weights)


class _MixtureHook:
    def __init__(self):
        self.scaled = []

    def scale_domain(self, domain, factor):
        self.scaled.append((domain, factor))


ITEMS = [{"domain": "math"}, {"domain": "general"}, {"domain": "general"}]


def test_the_mixture_hook_scales_the_domain_and_the_pool_is_left_alone():
    hook, pool = _MixtureHook(), _Pool(ITEMS, [0.2, 0.3, 0.5])
    trainer = SimpleNamespace(step_hooks=[object(), hook], pool=pool)
    lower_domain_weight(trainer, "general", 0.5)
    assert hook.scaled == [("general", 0.5)] and pool.set_calls == []


def test_without_a_hook_the_pool_weights_of_the_domain_are_scaled():
    pool = _Pool(ITEMS, [0.2, 0.3, 0.5])
    lower_domain_weight(SimpleNamespace(step_hooks=[object()], pool=pool), "general", 0.5)
    assert pool.set_calls == [pytest.approx([0.2, 0.15, 0.25])]  # the total (0.6) is below 1: still set
    unweighted = _Pool(ITEMS)
    lower_domain_weight(SimpleNamespace(step_hooks=[], pool=unweighted), "math", 0.25)
    assert unweighted.set_calls == [[0.25, 1.0, 1.0]]


def test_weights_that_would_all_be_zero_are_not_set():
    pool = _Pool([{"domain": "general"}], [1.0])
    lower_domain_weight(SimpleNamespace(step_hooks=[], pool=pool), "general", 0.0)
    assert pool.set_calls == []
