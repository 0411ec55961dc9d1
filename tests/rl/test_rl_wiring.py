"""The RL package's small contracts: input errors word for word, the settings the trainer hands to its
parts (optimizer, window, strategy), its checkpointing defaults, the per-step callback, and the mismatch
statistics at their edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from m1model.rl.checkpoint import list_checkpoints
from m1model.rl.optim import paper_adamw
from m1model.rl.rollout import Group, PromptPool, score_groups
from m1model.rl.trainer import RLTrainer, _mismatch_metrics, _mismatch_sums
from m1model.rl.window import LengthWindow
from tests.rl.test_trainer import make_trainer


def message(error: pytest.ExceptionInfo) -> str:
    return str(error.value)


def test_prompt_pool_errors():
    with pytest.raises(ValueError) as empty:
        PromptPool([], [])
    assert message(empty) == "the prompt pool is empty"
    prompts = PromptPool([[1], [2]], ["a", "b"])
    for weights in ([1.0], [1.0, 1.0, 1.0], [1.0, -0.5], [0.0, 0.0]):  # too few, too many, negative, all zero
        with pytest.raises(ValueError) as bad:
            prompts.set_weights(weights)
        assert message(bad) == "weights must be one non-negative number per prompt, not all zero"
    prompts.set_weights([0.0, 2.0])
    assert prompts.sample(3, np.random.default_rng(0)) == [1, 1, 1]


def test_window_limit_below_its_start_is_an_error():
    with pytest.raises(ValueError) as below:
        LengthWindow(start=8, limit=7)
    assert message(below) == "the window's limit must be >= its start"
    assert LengthWindow(start=8, limit=8).current == 8


def test_a_reward_function_that_loses_responses_is_an_error():
    group = Group(
        index=0,
        prompt=[1],
        responses=[[2], [3]],
        logprobs=[[0.0], [0.0]],
        finish_reasons=["stop"] * 2,
        rewards=[],
    )
    with pytest.raises(ValueError) as short:
        score_groups(
            [group],
            PromptPool([[1]], ["x"]),
            lambda items, responses: [1.0],
            max_new_tokens=4,
            overlong_cache=0,
        )
    assert message(short) == "reward_fn returned 1 rewards for 2 responses"


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_the_papers_adamw_takes_the_weight_decay_it_is_given(weight_decay):
    params = [torch.nn.Parameter(torch.zeros(2))]
    assert paper_adamw(params, 1e-3, weight_decay).param_groups[0]["weight_decay"] == weight_decay
    assert paper_adamw(params, 1e-3).param_groups[0]["weight_decay"] == 0.0  # not AdamW's own 0.01


def make(model, checkpoint_dir=None, cfg=None, **options) -> RLTrainer:
    settings = dict(group_size=2, prompts_per_step=2, updates_per_batch=1) | (cfg or {})
    return make_trainer(model, checkpoint_dir, options, **settings)


def test_the_trainer_hands_its_settings_to_its_parts(tiny_model):
    run = make(
        tiny_model, cfg={"weight_decay": 0.05, "window_ppl_steps": 5, "window_ppl_tol": 0.2}, strategy="fsdp"
    )
    assert run.optimizer.param_groups[0]["weight_decay"] == 0.05
    assert (run.window.ppl_steps, run.window.ppl_tol) == (5, 0.2)
    assert run.parallel.strategy == "fsdp"  # one process: no sharding, but the choice is kept


def test_checkpoints_are_periodic_only_when_asked_and_keep_the_newest_two(tmp_path, new_tiny_model):
    run = make(new_tiny_model(), tmp_path / "quiet")
    run.train(2)
    assert list_checkpoints(tmp_path / "quiet") == []  # no checkpoint_every: only explicit saves
    run = make(new_tiny_model(), tmp_path / "every", checkpoint_every=1)
    run.train(3)
    assert [p.name for p in list_checkpoints(tmp_path / "every")] == ["step-000002", "step-000003"]


def test_train_hands_each_steps_metrics_to_on_step(tiny_model):
    seen = []
    history = make(tiny_model).train(2, on_step=seen.append)
    assert seen == history and [m["step"] for m in seen] == [1.0, 2.0]


def mismatch(train, infer) -> dict[str, float]:
    return _mismatch_metrics(_mismatch_sums(torch.tensor(train), torch.tensor(infer)).tolist())


def test_mismatch_statistics_at_their_edges():
    assert mismatch([-1.0, -2.0], [-1.1, -2.3]) == pytest.approx(
        {"logprob_abs_diff": 0.2, "logprob_corr": 1.0}
    )
    # log-probs a few thousandths apart: variances far below 1, the correlation still reported
    small = mismatch([-1.0, -1.002, -1.001], [-1.0, -1.001, -1.002])
    assert small["logprob_corr"] == pytest.approx(0.5, abs=1e-3)
    assert mismatch([-1.0, -2.0], [-1.5, -1.5]) == pytest.approx(
        {"logprob_abs_diff": 0.5}
    )  # constant: no corr
    assert mismatch([], []) == {"logprob_abs_diff": 0.0}
    assert mismatch([-0.5], [-0.7]) == pytest.approx({"logprob_abs_diff": 0.2})  # one token: no corr
