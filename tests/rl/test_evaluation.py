"""The one greedy evaluation (m1model.rl.evaluation): its intervals and tests against scipy and by hand,
what it decodes, and that every caller in the project goes through it."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from m1model.rl.evaluation import (
    PairedChange,
    PassRate,
    SampledPassRate,
    greedy_completions,
    greedy_pass_rate,
    sampled_pass_rate,
    wilson_interval,
)
from m1model.rl.losses import LossConfig, policy_loss
from m1model.rl.rollout import SOLVED, Group, collate


def test_wilson_matches_scipy():
    for k, n in [(0, 10), (3, 10), (12, 100), (100, 100), (57, 230)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson_interval(5, 3)


def test_pass_rate_counts_and_round_trips():
    p = PassRate((True, False, True, True))
    assert (p.k, p.n, p.rate) == (3, 4, 0.75)
    assert str(p).startswith("3/4 (75.0%, 95% CI ")
    assert PassRate.from_dict(p.to_dict()) == p


def test_paired_change_uses_only_the_discordant_items():
    before = PassRate((True,) * 12 + (False,) * 88)
    after = PassRate((True,) * 10 + (False,) * 2 + (True,) * 10 + (False,) * 78)
    change = PairedChange.of(before, after)
    assert (change.gained, change.lost, change.n) == (10, 2, 100)
    assert change.difference == pytest.approx(0.08)
    # McNemar's exact test is the binomial test on the 12 discordant items.
    assert change.p_value() == pytest.approx(stats.binomtest(10, 12, 0.5).pvalue)
    # Agresti-Min by hand: cells + 0.5, n + 2.
    b, c, n = 10.5, 2.5, 102.0
    se = math.sqrt(b + c - (b - c) ** 2 / n) / n
    assert change.interval() == pytest.approx(
        ((b - c) / n - 1.959964 * se, (b - c) / n + 1.959964 * se), abs=1e-5
    )
    assert change.verdict() == "gain"
    assert PairedChange.of(after, before).verdict() == "loss"
    same = PairedChange.of(before, before)
    assert (same.difference, same.p_value(), same.verdict()) == (0.0, 1.0, "no change")
    with pytest.raises(ValueError, match="same items"):
        PairedChange.of(before, PassRate((True,)))


def test_a_small_paired_change_is_not_called_a_gain():
    before = PassRate((False,) * 100)
    after = PassRate((True,) * 2 + (False,) * 98)
    assert PairedChange.of(before, after).verdict() == "no change"


def test_greedy_pass_rate_decodes_greedily_and_restores_the_mode(tiny_model):
    model = tiny_model
    model.train()
    prompts = [[1, 5, 6], [1, 7], [1, 8, 9, 10]]
    completions = greedy_completions(model, prompts, max_new_tokens=4)
    # greedy: the argmax of the model's own next-token distribution at every position
    for prompt, c in zip(prompts, completions, strict=True):
        ids = torch.tensor([prompt + c.token_ids])
        with torch.no_grad():
            logits = model.eval()(ids).logits[0]
        for t, token in enumerate(c.token_ids):
            assert int(logits[len(prompt) - 1 + t].argmax()) == token
    model.train()
    target = completions[1].token_ids[0]
    seen = []

    def reward(items, responses):
        seen.extend(items)
        return [1.0 if r[0] == target else 0.99 for r in responses]

    result = greedy_pass_rate(model, prompts, ["a", "b", "c"], reward, max_new_tokens=4)
    assert model.training  # restored
    assert seen == ["a", "b", "c"]
    assert result.solved[1] is True and result.k == sum(c.token_ids[0] == target for c in completions)
    with pytest.raises(ValueError, match="2 prompts but 3 items"):
        greedy_pass_rate(model, prompts[:2], ["a", "b", "c"], reward, max_new_tokens=4)


def test_sampled_pass_rate_is_mean_at_k_with_a_normal_interval_over_items():
    p = SampledPassRate((4, 0, 2, 1), samples=4)
    assert (p.n, p.rate) == (4, 7 / 16)
    fractions = [1.0, 0.0, 0.5, 0.25]
    half = stats.norm.ppf(0.975) * stats.sem(fractions)  # the items are the sample
    assert p.interval() == pytest.approx((max(0.0, 7 / 16 - half), 7 / 16 + half))
    assert str(p).startswith("43.8% (mean@4 over 4 items, 95% CI ")
    assert SampledPassRate.from_dict(p.to_dict()) == p
    assert SampledPassRate((3,), samples=3).interval() == (0.0, 1.0)  # one item: no spread to measure
    with pytest.raises(ValueError, match=r"in \[0, 2\]"):
        SampledPassRate((3,), samples=2)
    with pytest.raises(ValueError, match="samples must be >= 1"):
        SampledPassRate((), samples=0)


def test_sampled_pass_rate_samples_the_policy_at_temperature_one(tiny_model):
    """The share of samples whose first token is t estimates pi(t | prompt) at temperature 1: the sampled
    evaluation draws from the distribution training samples from, k answers per item, items in order."""
    model = tiny_model
    model.train()
    prompts = [[1, 5, 6], [1, 7]]
    with torch.no_grad():
        probs = [torch.softmax(model.eval()(torch.tensor([p])).logits[0, -1], -1) for p in prompts]
    model.train()
    targets = [int(p.argmax()) for p in probs]
    seen = []

    def reward(items, responses):
        seen.extend(items)
        return [1.0 if r[0] == targets[i] else 0.0 for i, r in zip(items, responses, strict=True)]

    k = 400
    result = sampled_pass_rate(model, prompts, [0, 1], reward, samples=k, max_new_tokens=2, seed=3)
    assert model.training  # restored
    assert seen == [0] * k + [1] * k
    for i, p in enumerate(probs):
        expected = float(p[targets[i]])
        se = math.sqrt(expected * (1 - expected) / k)
        assert abs(result.solved[i] / k - expected) < 4 * se + 1e-9, (i, result.solved[i], expected)
    again = sampled_pass_rate(model, prompts, [0, 1], reward, samples=k, max_new_tokens=2, seed=3)
    assert again == result  # one seed, one draw: policies compared on a seed share their random numbers
    with pytest.raises(ValueError, match="temperature > 0"):
        sampled_pass_rate(model, prompts, [0, 1], reward, samples=2, max_new_tokens=2, temperature=0.0)
    with pytest.raises(ValueError, match="2 prompts but 1 items"):
        sampled_pass_rate(model, prompts, [0], reward, samples=2, max_new_tokens=2)


def test_rft_imitates_only_the_verified_responses():
    group = Group(
        index=0,
        prompt=[1, 2],
        responses=[[3, 4], [5], [6, 7, 8]],
        logprobs=[[-1.0, -1.0], [-1.0], [-1.0, -1.0, -1.0]],
        finish_reasons=["stop"] * 3,
        rewards=[1.0, 0.5, SOLVED],
    )
    data = collate([group], normalize_std=True, verified_only=True)
    assert data.advantages.tolist() == [1.0, 0.0, 1.0]
    logp = torch.tensor([[-0.5, -0.7, 0.0], [-0.2, 0.0, 0.0], [-0.1, -0.3, -0.9]], requires_grad=True)
    loss, m = policy_loss("rft", logp, data.old_logp, data.advantages, data.response_mask, LossConfig())
    # the mean NLL over the verified responses' 5 tokens; the 0.5-reward response gets no gradient
    assert loss.item() == pytest.approx((0.5 + 0.7 + 0.1 + 0.3 + 0.9) / 5)
    loss.backward()
    assert torch.all(logp.grad[1] == 0)
    assert logp.grad[0, :2].tolist() == pytest.approx([-0.2, -0.2])
    assert m["masked_fraction"] == pytest.approx(1 / 6)


def test_the_run_the_stages_and_the_experiments_evaluate_through_one_function(
    monkeypatch, tiny_stage, prefect_harness
):
    """`m1 run`'s evaluation flow, a stage's validation and the experiments' held-out measurement all
    decode through m1model.rl.evaluation.greedy_completions (spied on here), so a fix there holds for all."""
    import m1model.rl.evaluation as one
    from flows.config import load_config
    from flows.curriculum import evaluation as stage_evaluation
    from flows.curriculum import stage
    from flows.curriculum.base import base_tokenizer, fresh_model
    from flows.evaluate import evaluate
    from flows.experiments import runs
    from m1model.policy import save_policy

    calls: list[str] = []
    real = one.greedy_completions

    def spy(model, prompts, **kwargs):
        calls.append(caller)
        return real(model, prompts, **kwargs)

    monkeypatch.setattr(one, "greedy_completions", spy)
    path, home, _ = tiny_stage(steps=1)
    config = load_config(path)
    rows = [
        {"id": "x", "domain": "math", "task": "add", "prompt": "1 + 5 =", "reference": "6", "metadata": "{}"}
    ]
    tokenizer = base_tokenizer(rows, config.model.vocab_size)
    model = fresh_model(config.model, tokenizer)
    save_policy(model, tokenizer, home / "policy")
    score = runs.reward_fn(tokenizer, {"math"})

    caller = "run"
    result = evaluate(config, str(home / "policy"))
    caller = "stage"
    assert stage.validate is stage_evaluation.validate
    stage.validate(model, tokenizer, {"math": rows}, 4, score)
    caller = "experiment"
    runs.evaluate(model, tokenizer, rows, score, config.train)

    assert result["items"]["math"] == 3  # eval.n_items of the tiny config's held-out split
    assert sorted(set(calls)) == ["experiment", "run", "stage"]


def test_an_evaluation_on_the_same_inputs_is_reused_and_reruns_when_one_changes(
    monkeypatch, tiny_stage, prefect_harness
):
    """flows/evaluate.py keeps each result with what it was computed from (the checkpoint, the data
    versions, the evaluation settings): the same again decodes nothing; another setting or another
    checkpoint evaluates again."""
    import m1model.rl.evaluation as one
    from flows.config import apply_overrides, load_config
    from flows.curriculum.base import base_tokenizer, fresh_model
    from flows.evaluate import evaluate
    from m1model.policy import save_policy

    decoded: list[int] = []
    real = one.greedy_completions
    monkeypatch.setattr(
        one, "greedy_completions", lambda m, p, **kw: decoded.append(len(p)) or real(m, p, **kw)
    )
    path, home, _ = tiny_stage(steps=1)
    config = load_config(path)
    rows = [
        {"id": "x", "domain": "math", "task": "add", "prompt": "1 + 5 =", "reference": "6", "metadata": "{}"}
    ]
    tokenizer = base_tokenizer(rows, config.model.vocab_size)
    save_policy(fresh_model(config.model, tokenizer), tokenizer, home / "policy")

    first = evaluate(config, str(home / "policy"), "before")
    assert decoded and (home / "runs" / config.name / "eval" / "before.json").is_file()
    n = len(decoded)
    again = evaluate(config, str(home / "policy"), "before")
    assert len(decoded) == n and again == first  # nothing decoded, the same result
    save_policy(
        fresh_model(config.model.model_copy(update={"seed": 1}), tokenizer), tokenizer, home / "policy"
    )
    evaluate(config, str(home / "policy"), "before")  # the checkpoint's weights changed under its path
    assert len(decoded) > n
    n = len(decoded)
    fewer = evaluate(apply_overrides(config, ["eval.n_items=1"]), str(home / "policy"), "before")
    assert len(decoded) > n and fewer["items"]["math"] == 1
