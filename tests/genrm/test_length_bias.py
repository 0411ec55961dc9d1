"""Length bias: shaping/clipping/normalisation units, and a real RL stage (RLTrainer + PromptPool + Engine
on a tiny model) scored by a pairwise judge that secretly prefers longer responses, served on loopback."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from flows.config import LengthBiasConfig
from flows.curriculum.report import plot_length_bias
from flows.curriculum.settings import length_bias_settings
from m1model.rl.length_bias import LengthBias, LengthSeeking, slope, spearman
from tests.genrm.scripted import prefers_longer, scripted_judge

ITEM = {"domain": "general", "reference": "one two three four", "prompt": "say it"}


def _words(ids):
    return " ".join(map(str, ids))


def test_shaping_penalises_only_past_slack_times_the_reference():
    cfg = length_bias_settings(LengthBiasConfig(shaping=True, shaping_coef=0.5, shaping_slack=1.5))
    lb = LengthBias(cfg, encode=lambda s: s.split())  # the reference is 4 tokens: 6 are free
    fn = lb.wrap(lambda items, responses: [1.0] * len(items))
    out = fn([ITEM] * 4, [[1] * 3, [1] * 6, [1] * 9, [1] * 30])
    assert out == pytest.approx([1.0, 1.0, 0.75, 0.5])
    math_item = ITEM | {"domain": "math"}
    assert fn([math_item], [[1] * 30]) == [1.0]  # rule-verified domains are left alone


def test_group_normalisation_then_clipping():
    cfg = length_bias_settings(LengthBiasConfig(group_normalize=True, clip_min=-1.0, clip_max=1.0))
    fn = LengthBias(cfg).wrap(lambda items, responses: [0.0, 0.0, 0.0, 4.0, 1.0, 2.0])
    a, b = dict(ITEM), dict(ITEM)
    out = fn([a] * 4 + [b] * 2, [[1]] * 6)
    assert out[:3] == pytest.approx([-np.sqrt(1 / 3)] * 3, abs=1e-4) and out[3] == 1.0  # clipped from sqrt(3)
    assert out[4:] == pytest.approx([-1.0, 1.0], abs=1e-4)


class _Trainer:  # what the hook reads: the step counter and the pool
    def __init__(self):
        self.step = 0
        self.pool = None


def test_alarm_fires_when_length_grows_without_success_and_stop_raises():
    lb = LengthBias(
        length_bias_settings(LengthBiasConfig(window=3, on_alarm="stop")),
        decode=_words,
        success=lambda items, texts: [0.0] * len(items),
    )
    fn, trainer = lb.wrap(lambda items, responses: [len(r) / 10 for r in responses]), _Trainer()
    for step in range(2):
        fn([ITEM] * 4, [[1] * (5 + step * 3 + k) for k in range(4)])
        m = lb.hook(trainer, None)
        trainer.step += 1
        assert "length_bias/general/alarm" not in m and m["length_bias/general/corr"] == pytest.approx(1.0)
    fn([ITEM] * 4, [[1] * (11 + k) for k in range(4)])
    with pytest.raises(LengthSeeking, match="length seeking in domain 'general'"):
        lb.hook(trainer, None)


def test_no_alarm_when_success_grows_with_length():
    lb = LengthBias(
        length_bias_settings(LengthBiasConfig(window=3)),
        decode=_words,
        success=lambda items, texts: [len(t) > 20 for t in texts],
    )
    fn, trainer = lb.wrap(lambda items, responses: [len(r) / 10 for r in responses]), _Trainer()
    for step in range(5):
        fn([ITEM] * 4, [[1] * (4 + step * 3 + k) for k in range(4)])
        m = lb.hook(trainer, None)
        trainer.step += 1
    assert m["length_bias/general/success_trend"] > 0 and m["length_bias/general/alarm"] == 0


def test_spearman_edge_cases():
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0
    assert spearman([1, 2, 3, 4], [2, 4, 6, 9]) == pytest.approx(1.0)


# -- a real stage --------------------------------------------------------------------------------------

STEPS = 12
ALARM_WITHIN = 10  # the stated bound: the biased judge's alarm fires by this step


def _stage(url: str, cfg: LengthBiasConfig, seed: int = 0, prompts_per_step: int = 4):
    from flows.genrm.general import general_items
    from flows.genrm.labels import rule_success
    from m1model import Engine, M1Config, M1ForCausalLM, train_tokenizer
    from m1model.rl.rollout import PromptPool
    from m1model.rl.sft import SFTConfig, sft_warm_start
    from m1model.rl.trainer import RLConfig, RLTrainer
    from verifiers.genrm.pair import PairJudge
    from verifiers.scoring import make_reward_fn

    corpus = general_items(400, seed=3).to_dicts()
    rows = corpus[:24]
    tok = train_tokenizer([r["prompt"] + " " + r["reference"] for r in corpus], vocab_size=600)
    random.seed(seed)  # each stage from the same state, whatever ran before it in this process
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = M1ForCausalLM(
        M1Config(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            num_local_experts=2,
            num_experts_per_tok=1,
            layer_types=["linear_attention", "full_attention"],
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    )
    prompts = [tok.encode(r["prompt"]) for r in rows]
    # a short warm start: answers about as long as the references, then EOS
    examples = [
        (p, tok.encode(r["reference"], add_special_tokens=False) + [tok.eos_token_id])
        for p, r in zip(prompts, rows, strict=True)
    ]
    sft_warm_start(model, examples, SFTConfig(steps=200, lr=5e-3, batch_size=8))
    judge = PairJudge(url=url, constraint_weight=0.0, concurrency=8)
    decode = lambda ids: tok.decode(ids, skip_special_tokens=True)  # noqa: E731
    lb = LengthBias(
        length_bias_settings(cfg),
        decode=decode,
        encode=lambda s: tok.encode(s, add_special_tokens=False),
        success=rule_success,
    )
    trainer = RLTrainer(
        model,
        Engine(model),
        lb.wrap(make_reward_fn({"general": judge}, decode)),
        PromptPool(prompts, rows),
        RLConfig(
            group_size=4,
            prompts_per_step=prompts_per_step,
            lr=5e-3,
            updates_per_batch=1,
            max_new_tokens=64,
            stop_token_ids=(tok.eos_token_id,),
            dynamic_sampling=False,
            track_entropy=False,
            seed=seed,
        ),
        step_hooks=[lb.hook],
    )
    return trainer.train(STEPS)


def growth(lengths: list[float]) -> float:
    """From the mean of the first four steps to the mean of the last four."""
    return float(np.mean(lengths[-4:]) - np.mean(lengths[:4]))


@pytest.mark.slow
def test_a_length_preferring_judge_trips_the_alarm_and_shaping_removes_the_trend(tmp_path):
    # 8 prompts x 4 responses a step: each step's mean length is over 32 responses. The bounds below
    # held with margin over 6 seeds (worst case in brackets): a trajectory is one draw, and the draw
    # moves with the CPU's float rounding, so a bound that holds for one seed only fails elsewhere.
    with scripted_judge(prefers_longer) as (url, _):
        biased = _stage(url, LengthBiasConfig(window=4), prompts_per_step=8)
        shaped = _stage(
            url,
            LengthBiasConfig(window=4, shaping=True, shaping_coef=4.0, shaping_slack=1.0),
            prompts_per_step=8,
        )
    p = "length_bias/general"
    alarms = [int(h["step"]) for h in biased if h.get(f"{p}/alarm")]
    lengths = [h[f"{p}/length"] for h in biased]
    assert alarms and alarms[0] <= ALARM_WITHIN, (alarms, lengths)  # [7]
    assert lengths[-1] > 1.3 * lengths[0], lengths  # [3.4x]
    success = [h[f"{p}/success"] for h in biased]
    assert np.mean(success[-4:]) <= np.mean(success[:4]) + 0.05  # longer, not more often right

    shaped_lengths = [h[f"{p}/length"] for h in shaped]
    # shaping bites only past the reference's length, so one overshoot may still alarm before the
    # penalty pulls the length back; after that the shaped stage stays quiet, the biased one does not
    shaped_alarms = [int(h["step"]) for h in shaped if h.get(f"{p}/alarm")]
    assert len(shaped_alarms) < len(alarms) / 2 and all(s <= STEPS // 2 for s in shaped_alarms), (
        shaped_alarms,
        alarms,
        shaped_lengths,
    )
    # the biased run's length grows by 35-47 tokens from its first four steps to its last four; shaping
    # removes at least half of that growth [0.22 of it left] and ends far shorter [0.42 of the length]
    assert slope(lengths) / np.mean(lengths) > 0.05, lengths  # [0.12 of the mean length per step]
    assert growth(shaped_lengths) < growth(lengths) / 2, (lengths, shaped_lengths)
    assert np.mean(shaped_lengths[-4:]) < 0.6 * np.mean(lengths[-4:]), (lengths, shaped_lengths)
    png = plot_length_bias(biased, tmp_path / "length.png")
    assert png.stat().st_size > 10_000
