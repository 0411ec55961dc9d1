"""Details of one RL step a run depends on: step hooks see the step's batch and add their metrics, the
timings add up, the prompt pool samples without replacement within its support, and the generation
window reads an empty step and its boundary as documented."""

from __future__ import annotations

import numpy as np
import pytest

from m1model import Engine
from m1model.rl.rollout import PromptPool
from m1model.rl.trainer import RLConfig, RLTrainer
from m1model.rl.window import LengthWindow

from .conftest import make_tiny_model


def trainer(**kw) -> RLTrainer:
    model = make_tiny_model()
    pool = PromptPool([[1 + i % 5, 10 + i % 7, 2] for i in range(8)], [{"i": i} for i in range(8)])
    cfg = RLConfig(group_size=4, prompts_per_step=2, max_new_tokens=4, micro_batch_size=8, seed=1)
    return RLTrainer(model, Engine(model), lambda items, rs: [float(7 in r) for r in rs], pool, cfg, **kw)


def test_step_hooks_see_the_trainer_and_the_batch_and_add_their_metrics():
    seen = []

    def count(trainer, batch):
        seen.append((trainer, batch))
        return {"hook_groups": float(len(batch.sampled_groups))}

    t = trainer(step_hooks=[count, lambda trainer, batch: None])  # a hook may add nothing
    m = t.train_step()
    [(who, batch)] = seen
    assert who is t and m["hook_groups"] == m["groups_sampled"] == len(batch.sampled_groups) > 0
    assert {
        "reward_mean",
        "loss",
        "finite",
    } <= m.keys()  # the hook's metrics join the step's, not replace them


def test_step_timings_are_durations_that_add_up():
    m = trainer().train_step()
    assert 0 < m["rollout_seconds"] < m["seconds"] < 600
    assert 0 < m["update_seconds"] <= m["seconds"] - m["rollout_seconds"] + 1e-9


def test_prompt_pool_samples_distinct_prompts_within_its_support():
    pool = PromptPool([[i] for i in range(4)], list(range(4)))
    rng = np.random.default_rng(0)
    assert sorted(pool.sample(4, rng)) == [0, 1, 2, 3]  # all of them, each once
    assert len(pool.sample(6, rng)) == 6  # more than the pool: with replacement
    pool.set_weights([1.0, 1.0, 0.0, 0.0])
    picks = pool.sample(2, rng)
    assert sorted(picks) == [0, 1]  # within the weighted support, each once
    picks = pool.sample(3, rng)  # more than the support: with replacement, never a zero-weight prompt
    assert len(picks) == 3 and set(picks) <= {0, 1}


def test_window_reads_an_empty_step_as_length_zero_and_widens_at_exactly_near_times_the_window():
    window = LengthWindow(start=10, limit=20, step=5, near=0.9, ppl_steps=1, ppl_tol=0.5)
    m = window.observe(np.array([]), mean_nll=1.0)
    assert m["response_len_p99_ratio"] == 0.0 and m["window_length_ready"] == 0.0
    m = window.observe(np.full(5, 9), mean_nll=1.0)  # p99 == 0.9 * 10: "nears the window"
    assert m["window_length_ready"] == 1.0 and m["window_widened"] == 1.0 and window.current == 15
    assert window.observe(np.full(5, 9), mean_nll=1e9)["perplexity"] == pytest.approx(np.exp(50.0))


def test_after_step_hooks_see_the_finished_metrics_and_steps_count_up():
    seen = []

    def after(trainer, metrics):
        seen.append((trainer.step, dict(metrics)))
        return {"after": metrics["step"] * 10}

    t = trainer(after_step=[after, lambda trainer, metrics: None])
    first, second = t.train_step(), t.train_step()
    assert t.step == 2 and (first["step"], second["step"]) == (1.0, 2.0)
    assert [step for step, _ in seen] == [1, 2]  # called once the step has counted itself
    assert "seconds" in seen[0][1] and "loss" in seen[0][1]
    assert (first["after"], second["after"]) == (10.0, 20.0) and "reward_mean" in second
    assert [h["step"] for h in t.history] == [1.0, 2.0]


def test_checkpoints_every_n_steps_only_with_a_directory(tmp_path):
    from m1model.rl.checkpoint import list_checkpoints

    t = trainer(checkpoint_dir=tmp_path, checkpoint_every=2)
    t.train_step()
    assert list_checkpoints(tmp_path) == []
    t.train_step()
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000002"]
    t.train_step()
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000002"]
    never = trainer(checkpoint_every=1)  # no directory: nothing to write, and no error
    never.train_step()
    assert never.checkpoint_dir is None


def test_window_perplexity_signal_reads_the_last_ppl_steps_changes_against_a_strict_tolerance():
    window = LengthWindow(start=10, ppl_steps=1, ppl_tol=0.5)
    first = window.observe(np.full(3, 2), mean_nll=0.0)
    assert first["perplexity"] == 1.0 and first["perplexity_change"] == -1.0  # nothing to compare yet
    assert window.observe(np.full(3, 2), mean_nll=2.0)["window_ppl_ready"] == 0.0  # 1 -> e^2
    settled = window.observe(np.full(3, 2), mean_nll=2.0)  # only the last change counts: ready
    assert settled["window_ppl_ready"] == 1.0 and settled["perplexity_change"] == 0.0
    a, b = np.exp(2.0), np.exp(2.5)
    exact = LengthWindow(start=10, ppl_steps=1, ppl_tol=abs(b - a) / a)
    exact.observe(np.full(3, 2), mean_nll=2.0)
    assert exact.observe(np.full(3, 2), mean_nll=2.5)["window_ppl_ready"] == 0.0  # a change of exactly tol
