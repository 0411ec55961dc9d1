"""Curriculum weighting (sections 4.3 and 5): dynamic mixture weights, rising difficulty, repetition
truncation inside training, the overfitting warning, and what a config switches off."""

from __future__ import annotations

import json

import pytest
import torch

from flows.curriculum import Stage, load_curriculum
from flows.curriculum.evaluation import overfitting
from flows.curriculum.mixture import dynamic_mixture
from m1model.rl.mixture_weights import learnability
from m1model.rl.rollout import Group, PromptPool, RolloutBatch

MIXTURE = {"math": 0.5, "logic": 0.3, "code": 0.2}


def make_items(levels_by_key: dict[str, list[int | None]]) -> list[dict]:
    return [
        {"mixture_key": key, "metadata": json.dumps({} if lv is None else {"difficulty": lv})}
        for key, levels in levels_by_key.items()
        for lv in levels
    ]


class FakeTrainer:
    def __init__(self, n: int):
        self.pool = PromptPool([[1]] * n, list(range(n)))


def batch_with(rewards_by_index: dict[int, list[float]]) -> RolloutBatch:
    groups = [
        Group(i, [1], [[2]] * len(rs), [[0.0]] * len(rs), ["stop"] * len(rs), list(rs))
        for i, rs in rewards_by_index.items()
    ]
    return RolloutBatch(groups=groups, sampled_groups=groups)


def test_weights_follow_pass_rates_within_the_configured_bounds():
    stage = Stage(name="s", mixture=MIXTURE, steps=5, max_new_tokens=8, weight_floor=0.2, pass_rate_steps=2)
    items = make_items({"math": [None] * 4, "logic": [None] * 2, "code": [None] * 2})
    hook, trainer = dynamic_mixture(stage, items, [None] * 8), FakeTrainer(8)
    # math always solved, logic half solved, code not sampled yet
    m = hook(trainer, batch_with({0: [1.0, 1.0], 1: [1.0, 1.0], 4: [1.0, 0.0], 5: [0.0, 1.0]}))
    assert m["pass/math"] == 1.0 and m["pass/logic"] == 0.5 and "pass/code" not in m
    weights = hook.key_weights()
    assert weights["math"] == pytest.approx(0.5 * 0.2)  # too easy: down to the floor
    assert weights["logic"] == pytest.approx(0.3)  # learnable: its full configured weight
    assert weights["code"] == pytest.approx(0.2)  # unknown: configured weight
    assert all(weights[k] <= MIXTURE[k] + 1e-12 for k in MIXTURE)  # bounded by the configuration
    total = sum(weights.values())
    assert m["weight/logic"] == pytest.approx(0.3 / total)
    # the pool samples by the new weights: shared equally inside a key
    assert trainer.pool.weights == pytest.approx([0.025] * 4 + [0.15] * 2 + [0.1] * 2)
    # never solved: also the floor
    hook(trainer, batch_with({6: [0.0, 0.0]}))
    hook(trainer, batch_with({6: [0.0, 0.0]}))
    assert hook.key_weights()["code"] == pytest.approx(0.2 * 0.2)
    assert learnability(0.5) == 1.0 and learnability(0.0) == learnability(1.0) == 0.0


def test_static_weights_when_switched_off():
    stage = Stage(name="s", mixture=MIXTURE, steps=1, max_new_tokens=8, dynamic_weights=False)
    hook = dynamic_mixture(stage, make_items({"math": [None], "logic": [None], "code": [None]}), [None] * 3)
    hook(FakeTrainer(3), batch_with({0: [1.0, 1.0]}))
    assert hook.key_weights() == MIXTURE


def test_difficulty_rises_when_a_key_is_solved():
    stage = Stage(
        name="s",
        mixture={"logic": 1.0},
        steps=9,
        max_new_tokens=8,
        raise_difficulty_above=0.8,
        pass_rate_steps=2,
    )
    levels = [1, 1, 2, 2, 3]
    hook, trainer = dynamic_mixture(stage, make_items({"logic": levels}), levels), FakeTrainer(5)
    hook(trainer, batch_with({0: [1.0, 1.0]}))
    assert hook.min_level["logic"] is None  # one step is not yet a recent pass rate
    m = hook(trainer, batch_with({1: [1.0, 1.0]}))
    assert hook.min_level["logic"] == 2 and m["level/logic"] == 2
    assert trainer.pool.weights == pytest.approx([0, 0, 1 / 3, 1 / 3, 1 / 3])
    hook(trainer, batch_with({2: [1.0, 0.0]}))
    hook(trainer, batch_with({3: [1.0, 0.0]}))
    assert hook.min_level["logic"] == 2  # 0.5 <= 0.8: stays
    for _ in range(2):
        hook(trainer, batch_with({4: [1.0, 1.0]}))
    assert hook.min_level["logic"] == 3
    for _ in range(2):
        hook(trainer, batch_with({4: [1.0, 1.0]}))
    assert hook.min_level["logic"] == 3  # no harder level left
    state = hook.state_dict()
    again = dynamic_mixture(stage, make_items({"logic": levels}), levels)
    again.load_state_dict(state)
    assert again.item_weights() == hook.item_weights()


def test_repetition_truncation_fires_inside_training():
    """A degenerate policy (one token far likelier than all others) loops; the configured early
    truncation stops those responses and the step metrics count them."""
    from m1model import Engine
    from m1model.rl.trainer import RLConfig, RLTrainer
    from tests.rl.conftest import VOCAB, make_tiny_model

    model = make_tiny_model()
    with torch.no_grad():
        model.lm_head.weight.zero_()
        model.lm_head.weight[5] = 50.0 * model.model.norm.weight.sign()  # huge logit for token 5 everywhere
    cfg = RLConfig(
        group_size=2, prompts_per_step=2, max_new_tokens=12, repetition_run=4, dynamic_sampling=False, lr=0.0
    )
    pool = PromptPool([[1, 2], [3, 4]], [{}, {}])
    trainer = RLTrainer(model, Engine(model), lambda items, rs: [float(len(r)) for r in rs], pool, cfg)
    m = trainer.train_step()
    assert m["repetition_fraction"] == 1.0 and m["repetition_truncated"] == 4.0
    assert m["response_len_mean"] < 8  # each stopped after a run of 4 near-certain tokens, not at 12
    assert VOCAB > 5


def test_overfitting_warning():
    rising = [{"reward_mean": r} for r in (0.1, 0.1, 0.3, 0.5)]
    assert "overfitting" in overfitting(rising, 0.40, 0.30, 0.02)
    assert overfitting(rising, 0.40, 0.41, 0.02) is None  # validation held
    falling = [{"reward_mean": r} for r in (0.5, 0.4, 0.3, 0.2)]
    assert overfitting(falling, 0.40, 0.30, 0.02) is None  # training did not improve either


def test_a_switched_off_producer_prunes_the_curriculum():
    tiny = load_curriculum("tiny")
    pruned, notes = tiny.active(lambda kind: kind != "general")
    assert "general" not in pruned.names and pruned.switched_off == ["general"]
    assert all("general" not in s.mixture for s in pruned.stages)
    assert "{run}-general" not in pruned.datasets
    assert any("switched off" in n for n in notes)
    full, _ = tiny.active(lambda kind: True)
    assert full.names == tiny.names
    from flows.errors import ConfigError

    with pytest.raises(ConfigError, match="switched off by this config"):
        pruned.index("general")
