"""Does RL learn here? The first two rungs of the ladder in flows/experiments/README.md, on the pipeline's
own pieces: a generator, its verifier, the base's tokenizer and model factory, the SFT warm start, the
settings translation (rl_config) and the one trainer.

1. Overfit one prompt: G responses to one prompt the warm start solves now and then; the mean sampled
   reward reaches 0.95 within a stated number of steps (fast).
2. A learnable task (the bundled math generator's one-digit sums, difficulty 2): the held-out greedy pass
   rate of 200 items training never sees rises, a paired gain whose 95% interval excludes zero, by at
   least 0.15, within about a CPU minute of RL (slow). The RL learning rate is this task's, 1e-3: at the
   pipeline's default 1e-4 (chosen on the mixed math + logic data, where 1e-3 loses the gain) the sums
   rose +0.07 to +0.14 in 30-80 steps; at 1e-3, 50 steps gain +0.205 to +0.30 over RL seeds 0-4 from this
   warm start, and +0.09 to +0.31 over warm-start seeds 0-3 (flows/experiments/README.md, "Rung 2 as
   measured").

Both failed before the fixes the README describes: early truncation after 6 confident tokens cut every
learnt answer (rung 1 fell from 0.88 to 0 in one step and never recovered), and the pipeline's RL learning
rate then (2e-3) collapsed the answer format of the mixed data within 5 steps.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from flows.config import ModelConfig, TrainConfig
from flows.curriculum.base import base_tokenizer
from flows.curriculum.evaluation import pass_rate
from flows.curriculum.prompts import encode_prompt, sft_examples
from flows.curriculum.settings import rl_config
from flows.data.word_problems import _gift
from flows.experiments.runs import reward_fn
from flows.model_settings import fresh_model, sft_config
from m1model import Engine, SamplingParams
from m1model.rl.evaluation import PairedChange
from m1model.rl.rollout import PromptPool
from m1model.rl.sft import sft_warm_start
from m1model.rl.trainer import RLTrainer
from verifiers.logic import get_task

RUNG1_STEPS = 10  # the stated budget: RL steps (generation batches of G = 16) to mean reward >= 0.95


def items(n: int, seed0: int = 0) -> list[dict]:
    task = get_task("object_counting")
    return [task.generate(1, seed0 + i).to_item(seed0 + i) for i in range(n)]


def warm_start(rows: list[dict], steps: int, seed: int = 0, vocab_size: int = 320):
    torch.manual_seed(seed)
    tokenizer = base_tokenizer(rows, vocab_size)
    model = fresh_model(ModelConfig(vocab_size=vocab_size), tokenizer)
    tc = TrainConfig(sft_steps=steps, seed=seed)
    sft_warm_start(model, sft_examples(tokenizer, rows), sft_config(tc, tokenizer))
    return model, tokenizer


def sampled_reward(model, tokenizer, row, score, k: int = 16) -> float:
    params = SamplingParams(temperature=1.0, max_tokens=16, stop_token_ids=(tokenizer.eos_token_id,), seed=7)
    out = Engine(model).generate([encode_prompt(tokenizer, row)] * k, params)
    return float(np.mean(score([row] * k, [c.token_ids for c in out])))


def test_rung1_overfits_one_prompt():
    torch.set_num_threads(1)
    rows = items(80)
    model, tokenizer = warm_start(rows[:50], steps=150)
    score = reward_fn(tokenizer, {"logic"})
    # a prompt the warm start never trained on and solves only sometimes (most it solves always or never)
    start = {i: sampled_reward(model, tokenizer, rows[i], score) for i in range(50, 80)}
    idx = next((i for i, r in start.items() if 0.05 <= r <= 0.7), None)
    assert idx is not None, start
    tc = TrainConfig(prompts_per_step=1, group_size=16, updates_per_batch=4, max_new_tokens=16, seed=0)
    trainer = RLTrainer(
        model,
        Engine(model),
        score,
        PromptPool([encode_prompt(tokenizer, rows[idx])], [rows[idx]]),
        rl_config(tc, tokenizer),
    )
    rewards = [trainer.train_step()["reward_mean"] for _ in range(RUNG1_STEPS)]
    assert max(np.convolve(rewards, np.ones(2) / 2, mode="valid")) >= 0.95, (start[idx], rewards)
    assert trainer.history[-1]["repetition_fraction"] == 0.0  # a confident answer is not cut short


RUNG2_STEPS = 50
RUNG2_LR = 1e-3  # this task's learning rate: 10x the pipeline's, measured above


def sums(n: int) -> list[dict]:
    """Distinct one-digit-sum word problems from the bundled generator (flows/data/word_problems.py)."""
    rng, seen, out = random.Random(5), set(), []
    while len(out) < n:
        p = _gift(rng)
        if p.prompt not in seen:
            seen.add(p.prompt)
            out.append(
                {
                    "id": f"sum-{len(out)}",
                    "domain": "math",
                    "task": "word_problem",
                    "prompt": p.prompt,
                    "reference": p.solution,
                    "metadata": "{}",
                }
            )
    return out


@pytest.mark.slow
def test_rung2_held_out_sums_rise():
    """A short warm start knows the format and some sums (pass@8 far above greedy); RL with the
    pipeline's trainer and settings, at this task's learning rate, sharpens it on items it never
    evaluates on."""
    torch.set_num_threads(1)
    rows = sums(1500)
    heldout, train = rows[:200], rows[200:]
    model, tokenizer = warm_start(train, steps=100, vocab_size=512)
    score = reward_fn(tokenizer, {"math"})
    before = pass_rate(model, tokenizer, heldout, 16, score)
    tc = TrainConfig(
        prompts_per_step=32, group_size=8, updates_per_batch=4, max_new_tokens=16, rl_lr=RUNG2_LR, seed=0
    )
    pool = PromptPool([encode_prompt(tokenizer, r) for r in train], train)
    trainer = RLTrainer(model, Engine(model), score, pool, rl_config(tc, tokenizer))
    trainer.train(RUNG2_STEPS)
    after = pass_rate(model, tokenizer, heldout, 16, score)
    change = PairedChange.of(before, after)
    assert change.difference >= 0.15 and change.verdict() == "gain", (str(before), str(after))
