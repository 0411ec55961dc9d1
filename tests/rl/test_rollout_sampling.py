"""What the trainer asks the engine for: the configured sampling settings, seeds that make a run
repeatable, and refill rounds that ask for exactly the prompts still missing."""

from __future__ import annotations

import numpy as np
import pytest

from m1model import Engine
from m1model.rl.rollout import PromptPool
from m1model.rl.trainer import RLConfig, RLTrainer

from .conftest import make_tiny_model


class RecordingEngine(Engine):
    """The real engine; each call's sampling settings and prompt count are kept."""

    def __init__(self, model):
        super().__init__(model)
        self.calls = []

    def generate(self, prompts, params):
        self.calls.append((len(prompts), params))
        return super().generate(prompts, params)


def pool(n: int = 12) -> PromptPool:
    return PromptPool([[1 + i % 5, 10 + i % 7, 2] for i in range(n)], [{"i": i} for i in range(n)])


def trainer(reward=lambda items, responses: [float(7 in r) for r in responses], seed=0, **kw):
    model = make_tiny_model(seed)
    cfg = RLConfig(
        **(dict(group_size=4, prompts_per_step=3, max_new_tokens=5, micro_batch_size=8, seed=3) | kw)
    )
    return RLTrainer(model, RecordingEngine(model), reward, pool(), cfg)


def test_the_engine_gets_the_configured_sampling_settings():
    t = trainer(
        temperature=0.7,
        top_p=0.9,
        stop_token_ids=(2, 5),
        repetition_run=9,
        repetition_prob=0.5,
        dynamic_sampling=False,
    )
    t.rollout()
    [(n, params)] = t.engine.calls
    assert n == 3 * 4  # every prompt G times
    assert (params.temperature, params.top_p, params.max_tokens) == (0.7, 0.9, 5)
    assert tuple(params.stop_token_ids) == (2, 5)
    assert (params.repetition_run, params.repetition_prob) == (9, 0.5)
    assert isinstance(params.seed, int)


def _rollout(t):
    batch = t.rollout()
    return [(g.index, g.responses) for g in batch.groups]


def test_rollouts_repeat_for_the_same_seed_and_step_and_differ_across_steps_and_seeds():
    first, again = trainer(dynamic_sampling=False), trainer(dynamic_sampling=False)
    assert _rollout(first) == _rollout(again)
    seeds = [first.engine.calls[0][1].seed]
    first.step = again.step = 1
    assert _rollout(first) == _rollout(again)
    seeds.append(first.engine.calls[1][1].seed)
    assert seeds[0] != seeds[1]  # each step samples anew
    other = trainer(dynamic_sampling=False, seed=7)
    assert _rollout(other) != _rollout(trainer(dynamic_sampling=False))


def test_refill_rounds_ask_only_for_the_prompts_still_missing():
    """Dynamic sampling: a round keeps its informative groups, the next asks for the rest, and
    sampling stops as soon as the step has its prompts (here in round 4 of up to 5)."""
    kept_per_round = []

    def reward(items, responses):  # groups of prompts 0, 3, 6 and 9 are informative, the others all zero
        kept_per_round.append(sum(1 for it in items[::4] if it["i"] % 3 == 0))
        return [float(it["i"] % 3 == 0 and k % 2 == 0) for k, it in enumerate(items)]

    t = trainer(reward=reward, prompts_per_step=3, max_sampling_rounds=5)
    batch = t.rollout()
    asked = [n // 4 for n, _ in t.engine.calls]
    assert 2 <= len(asked) < 5 and kept_per_round[0] > 0  # this seed refills, and stops before the last round
    missing = 3
    for n, kept in zip(asked, kept_per_round, strict=True):
        assert n == missing
        missing -= min(kept, missing)
    assert missing == 0 and len(batch.groups) == 3 and batch.rounds == len(asked)
    assert all(g.index % 3 == 0 for g in batch.groups)


def test_step_metrics_describe_every_sampled_group_of_the_step():
    """reward and length statistics over every sampled response of every round, kept or not."""
    rounds = []

    def reward(items, responses):  # groups of prompts 0, 4 and 8 are informative, the others all zero
        rounds.append(len(responses))
        return [float(it["i"] % 4 == 0 and k % 2 == 0) for k, it in enumerate(items)]

    t = trainer(
        reward=reward,
        prompts_per_step=3,
        max_sampling_rounds=4,
        max_new_tokens=3,
        stop_token_ids=tuple(range(1, 8)),
    )
    seen = []
    rollout = t.rollout
    t.rollout = lambda: seen.append(rollout()) or seen[-1]
    m = t.train_step()
    [batch] = seen
    assert len(batch.sampled_groups) == sum(n // 4 for n in rounds)  # every round's groups, kept or not
    rewards = [r for g in batch.sampled_groups for r in g.rewards]
    lengths = [len(r) for g in batch.sampled_groups for r in g.responses]
    finish = [f for g in batch.sampled_groups for f in g.finish_reasons]
    assert m["step"] == 1.0 and t.step == 1
    assert m["groups_sampled"] == len(batch.sampled_groups) and m["sampling_rounds"] == len(rounds) >= 2
    assert m["reward_mean"] == pytest.approx(np.mean(rewards)) and m["reward_std"] == pytest.approx(
        np.std(rewards)
    )
    assert m["response_len_p99"] == pytest.approx(np.quantile(lengths, 0.99))
    assert m["truncated_fraction"] == pytest.approx(finish.count("length") / len(finish))
    assert 0 < m["truncated_fraction"] < 1


def test_the_overlong_penalty_uses_the_current_window():
    """DAPO's soft penalty over the window's last token: 0 up to 2 tokens, -1 at the full 3."""
    t = trainer(
        reward=lambda items, responses: [0.0] * len(responses),
        max_new_tokens=3,
        overlong_cache=1,
        stop_token_ids=tuple(range(1, 8)),
        dynamic_sampling=False,
    )
    batch = t.rollout()
    pairs = [(len(resp), r) for g in batch.groups for resp, r in zip(g.responses, g.rewards, strict=True)]
    assert {n for n, _ in pairs} >= {1, 3}
    assert all(r == (-1.0 if n == 3 else 0.0) for n, r in pairs)


def test_no_two_steps_sample_with_the_same_seed():
    """Seeds come from a 31-bit range: over 40 steps none repeats (a narrow range would replay one
    step's random stream in a later step)."""
    t = trainer(dynamic_sampling=False, prompts_per_step=1)
    for step in range(40):
        t.step = step
        t.rollout()
    seeds = [params.seed for _, params in t.engine.calls]
    assert len(seeds) == 40 and len(set(seeds)) == 40
    assert all(0 <= s < 2**31 for s in seeds)
