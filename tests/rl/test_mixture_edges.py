"""Dynamic mixture weights' edges (m1model/rl/mixture_weights.py): rewards outside [0, 1] count as a
pass rate clipped to it, the difficulty rises only strictly above its threshold, and the length-bias
alarm's domain scale reaches every key of the domain (``logic/sudoku`` is under ``logic``)."""

from __future__ import annotations

import pytest

from m1model.rl.mixture_weights import DynamicMixture, MixtureSettings
from tests.rl.test_curriculum_weighting import FakeTrainer, batch_with


def mixture(keys, levels=None, **change) -> DynamicMixture:
    settings = dict(
        mixture={"math": 0.5, "logic/sudoku": 0.3, "logic/maze": 0.2}, dynamic_weights=True, weight_floor=0.2,
        pass_rate_steps=1, raise_difficulty_above=None,
    )  # fmt: skip
    return DynamicMixture(MixtureSettings(**(settings | change)), keys, levels or [None] * len(keys))


def test_rewards_are_clipped_to_zero_one_before_the_pass_rate():
    hook = mixture(["math", "logic/sudoku", "logic/maze"])
    m = hook(FakeTrainer(3), batch_with({0: [3.0, 0.0], 1: [-2.0, 1.0]}))
    assert m["pass/math"] == 0.5 and m["pass/logic/sudoku"] == 0.5  # not 1.5 and -0.5
    assert hook.key_weights()["math"] == pytest.approx(0.5)  # learnable: the full configured weight


@pytest.mark.parametrize(("rewards", "raised"), [([1.0, 0.0, 1.0, 1.0], False), ([1.0, 1.0, 1.0, 1.0], True)])
def test_the_difficulty_rises_only_above_the_threshold(rewards, raised):
    levels = [1, 2]
    hook = mixture(["math", "math"], levels, mixture={"math": 1.0}, raise_difficulty_above=0.75)
    hook(FakeTrainer(2), batch_with({0: rewards}))  # a pass rate of exactly 0.75 stays
    assert hook.min_level["math"] == (2 if raised else None)


def test_a_domain_scale_reaches_its_tasks_keys():
    hook = mixture(["math", "logic/sudoku", "logic/maze"])
    hook.scale_domain("logic", 0.5)
    assert hook.key_weights() == pytest.approx({"math": 0.5, "logic/sudoku": 0.15, "logic/maze": 0.1})
    hook.scale_domain("logic", 0.5)  # a second alarm halves again
    assert hook.key_weights()["logic/maze"] == pytest.approx(0.05)
