"""What the trainer asks the engine for: the configured sampling settings, seeds that make a run
repeatable, and refill rounds that ask for exactly the prompts still missing."""

from __future__ import annotations

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
    """Dynamic sampling: a round keeps its informative groups and the next asks for the rest."""
    kept_per_round = []

    def reward(items, responses):  # groups of prompts 0, 4 and 8 are informative, the others all zero
        kept_per_round.append(sum(1 for it in items[::4] if it["i"] % 4 == 0))
        return [float(it["i"] % 4 == 0 and k % 2 == 0) for k, it in enumerate(items)]

    t = trainer(reward=reward, prompts_per_step=3, max_sampling_rounds=4)
    batch = t.rollout()
    asked = [n // 4 for n, _ in t.engine.calls]
    assert len(asked) >= 2 and kept_per_round[0] > 0  # this seed refills after keeping some groups
    missing = 3
    for n, kept in zip(asked, kept_per_round, strict=True):
        assert n == missing
        missing -= min(kept, missing)
    assert len(batch.groups) == min(3, sum(kept_per_round)) and batch.rounds == len(asked)
    assert all(g.index % 4 == 0 for g in batch.groups)
