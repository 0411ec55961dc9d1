"""The RL trainer end to end on the real tiny M1 model with a simple rule reward."""

from __future__ import annotations

import math

import pytest
import torch

from m1model import Engine
from m1model.rl.losses import LossConfig
from m1model.rl.rollout import PromptPool
from m1model.rl.trainer import RLConfig, RLTrainer

TARGET = 7  # reward 1 when a response contains this token


def contains_target(items, responses):
    return [float(TARGET in r) for r in responses]


def pool() -> PromptPool:
    prompts = [[1 + (i % 5), 10 + (i % 7), 2] for i in range(12)]
    return PromptPool(prompts=prompts, items=[{"i": i} for i in range(12)])


def rl_config(**kw) -> RLConfig:
    base = dict(
        algorithm="cispo",
        group_size=8,
        prompts_per_step=4,
        lr=2e-2,
        updates_per_batch=2,
        max_new_tokens=5,
        loss=LossConfig(eps_is_high=2.0),
        seed=3,
        micro_batch_size=16,
        max_sampling_rounds=2,
    )
    return RLConfig(**(base | kw))


def make_trainer(model, checkpoint_dir=None, options: dict | None = None, **kw) -> RLTrainer:
    """A trainer on ``pool()`` rewarded by `contains_target`; ``kw`` override `rl_config`, ``options``
    are RLTrainer's own keyword arguments (step hooks, keep_last, strategy, ...)."""
    return RLTrainer(
        model,
        Engine(model),
        contains_target,
        pool(),
        rl_config(**kw),
        checkpoint_dir=checkpoint_dir,
        **(options or {}),
    )


def test_step_metrics_finite_and_weights_change(tiny_model):
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    trainer = make_trainer(tiny_model)
    m = trainer.train_step()
    assert m["finite"] == 1.0 and m["skipped_updates"] == 0.0
    for key in (
        "loss",
        "reward_mean",
        "clip_fraction",
        "is_weight_mean",
        "grad_norm",
        "entropy",
        "logprob_corr",
    ):
        assert math.isfinite(m[key]), key
    assert m["groups_kept"] >= 1
    # First minibatch is on-policy: training and engine log-probs of the same tokens agree.
    assert m["logprob_abs_diff"] < 1e-4
    changed = [k for k, v in tiny_model.state_dict().items() if not torch.equal(v, before[k])]
    assert "lm_head.weight" in changed and len(changed) > 5


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["cispo", "grpo", "dapo"])
def test_mean_reward_rises(algorithm, tiny_model):
    trainer = make_trainer(tiny_model, algorithm=algorithm)
    history = trainer.train(5)
    first, last = history[0]["reward_mean"], max(h["reward_mean"] for h in history[-2:])
    assert all(h["finite"] == 1.0 for h in history)
    assert last > first + 0.2, [round(h["reward_mean"], 3) for h in history]


def test_dynamic_sampling_drops_uniform_groups(tiny_model):
    trainer = RLTrainer(
        tiny_model, Engine(tiny_model), lambda items, rs: [1.0] * len(rs), pool(), rl_config()
    )
    m = trainer.train_step()
    assert m["groups_kept"] == 0 and m["sampling_rounds"] == rl_config().max_sampling_rounds
    assert m["skipped_updates"] == rl_config().updates_per_batch


@pytest.mark.slow
def test_checkpoint_resume_is_identical(tmp_path, new_tiny_model):
    straight = make_trainer(new_tiny_model())
    straight.train(2)

    first = make_trainer(new_tiny_model(), checkpoint_dir=tmp_path)
    first.train(1)
    first.save()

    # A differently initialised model: weights, AdamW state, step and RNG must all come from the checkpoint.
    resumed = make_trainer(new_tiny_model(seed=99), checkpoint_dir=tmp_path)
    assert resumed.resume()
    assert resumed.step == 1
    resumed.train(2)
    for k, v in straight.model.state_dict().items():
        assert torch.equal(v, resumed.model.state_dict()[k]), k
    assert [h["reward_mean"] for h in resumed.history] == [h["reward_mean"] for h in straight.history]
    assert (
        resumed.optimizer.state_dict()["state"][0]["step"]
        == straight.optimizer.state_dict()["state"][0]["step"]
    )


def test_optimizer_is_the_papers_adamw(tiny_model):
    """Section 3.2: beta2 0.95 and eps 1e-15; the defaults (0.999, 1e-8) swamp M1's tiny gradients."""
    optimizer = make_trainer(tiny_model).optimizer
    assert type(optimizer) is torch.optim.AdamW
    (group,) = optimizer.param_groups
    assert group["betas"] == (0.9, 0.95) and group["eps"] == 1e-15
    assert group["params"] == [p for p in tiny_model.parameters() if p.requires_grad]
