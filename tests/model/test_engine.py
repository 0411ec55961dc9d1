"""The generation engine: policy log-probs, sampling controls, stop tokens and repetition truncation."""

from __future__ import annotations

import pytest
import torch

from m1model import Engine, SamplingParams

from .conftest import TINY_CONFIGS, tiny_model

PROMPTS = [[5, 9, 14], [7, 3, 3, 40, 41, 12, 8], [60]]


@pytest.fixture
def model():
    return tiny_model(**TINY_CONFIGS["lightning_prefix_top2"])


def test_logprobs_are_the_policy_logprobs_of_the_sampled_tokens(model):
    """Sampled at temperature 0.7 / top-p 0.9, but logprobs are log pi(token) of the raw model (what CISPO
    needs), i.e. exactly what the training forward computes on prompt + completion."""
    params = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=12, seed=0)
    for prompt, c in zip(PROMPTS, Engine(model).generate(PROMPTS, params), strict=True):
        seq = torch.tensor([prompt + c.token_ids])
        with torch.no_grad():
            expected = model.token_logprobs(seq)[0, len(prompt) - 1 :]
        assert len(c.logprobs) == len(c.token_ids) == 12 and c.finish_reason == "length"
        torch.testing.assert_close(torch.tensor(c.logprobs), expected, atol=1e-4, rtol=0)


def test_seed_makes_sampling_reproducible(model):
    engine = Engine(model)
    a = engine.generate(PROMPTS, SamplingParams(temperature=1.0, max_tokens=10, seed=7))
    b = engine.generate(PROMPTS, SamplingParams(temperature=1.0, max_tokens=10, seed=7))
    c = engine.generate(PROMPTS, SamplingParams(temperature=1.0, max_tokens=10, seed=8))
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    assert [x.token_ids for x in a] != [x.token_ids for x in c]


def test_tiny_top_p_is_greedy(model):
    engine = Engine(model)
    greedy = engine.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=8))
    nucleus = engine.generate(PROMPTS, SamplingParams(temperature=1.0, top_p=1e-6, max_tokens=8, seed=1))
    assert [x.token_ids for x in greedy] == [x.token_ids for x in nucleus]


def test_stop_token_ends_one_sequence_and_is_included(model):
    engine = Engine(model)
    free = engine.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=10))
    stop = free[1].token_ids[4]
    first = free[1].token_ids.index(stop)
    out = engine.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=10, stop_token_ids=[stop]))
    assert out[1].finish_reason == "stop" and out[1].token_ids == free[1].token_ids[: first + 1]
    for before, after in zip(free, out, strict=True):  # other rows are unaffected by a row leaving
        if stop not in before.token_ids:
            assert after.token_ids == before.token_ids and after.finish_reason == "length"


def _looping_model():
    """A model that always predicts token 17 with probability ~1: constant embeddings, every attention
    and expert output zeroed, and an LM head that reads the one non-zero feature."""
    model = tiny_model(**TINY_CONFIGS["lightning_prefix_top2"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("out_proj.weight", "o_proj.weight", "w2.weight")):
                p.zero_()
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, 0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[17, 0] = 5.0
    return model


def test_repetition_truncation():
    engine = Engine(_looping_model())
    out = engine.generate(PROMPTS, SamplingParams(temperature=1.0, max_tokens=20, repetition_run=6, seed=0))
    for c in out:
        assert c.finish_reason == "repetition"
        assert c.token_ids == [17] * 6
        assert min(c.logprobs) > torch.tensor(0.99).log().item()
    relaxed = engine.generate(
        PROMPTS, SamplingParams(temperature=1.0, max_tokens=20, repetition_run=50, seed=0)
    )
    assert all(c.finish_reason == "length" and len(c.token_ids) == 20 for c in relaxed)


def test_bad_prompts_and_params_are_rejected(model):
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        Engine(model).generate([[1], []], SamplingParams())
    with pytest.raises(ValueError, match="outside"):
        Engine(model).generate([[1, 10_000]], SamplingParams())
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)


def test_sampling_draws_the_categorical_distribution_and_never_a_filtered_token():
    from m1model.engine import sample_tokens

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2, 0.0]])).expand(40_000, 4)
    u = torch.rand(40_000, generator=torch.Generator().manual_seed(0))
    ones = torch.ones(40_000)
    counts = torch.bincount(sample_tokens(logits, ones, ones, u), minlength=4).float() / 40_000
    assert torch.allclose(counts, torch.tensor([0.5, 0.3, 0.2, 0.0]), atol=0.01)
    top = torch.bincount(sample_tokens(logits, ones, ones * 0.6, u), minlength=4)
    assert top[2] == 0 and top[3] == 0 and top[0] > top[1] > 0  # top-p keeps 0.5 + 0.3 only


def test_each_row_samples_with_its_own_temperature_and_top_p():
    from m1model.engine import sample_tokens

    logits = torch.log(torch.tensor([[0.1, 0.6, 0.3]])).expand(3, 3)
    u = torch.tensor([0.99, 0.99, 0.99])  # the last token's share of the inverse CDF
    got = sample_tokens(logits, torch.tensor([0.0, 1.0, 1.0]), torch.tensor([1.0, 1.0, 0.5]), u)
    assert got.tolist() == [1, 2, 1]  # greedy; sampled; the nucleus keeps only the 0.6 token


def test_forced_tokens_are_scored_along_the_decode_path(model):
    """Teacher forcing through the engine (what the precision probe's rollout path uses): the given
    tokens, in place of samples, with the policy's logprobs of them."""
    tokens = [7, 7, 30, 2, 99]
    engine = Engine(model)
    (req,) = engine.submit(
        [PROMPTS[1]], SamplingParams(temperature=1.0, max_tokens=5, seed=0), forced=[tokens]
    )
    while not req.finished:
        engine.step()
    assert req.output == tokens and req.finish_reason == "length"
    with torch.no_grad():
        expected = model.token_logprobs(torch.tensor([PROMPTS[1] + tokens]))[0, len(PROMPTS[1]) - 1 :]
    torch.testing.assert_close(torch.tensor(req.logprobs), expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 0.9)])
def test_seeded_requests_together_draw_the_policys_distribution(model, temperature, top_p):
    """2000 one-token requests of one seeded call, each with its own random stream: their tokens follow
    softmax(logits / T) restricted to the top-p nucleus, within 4.5 standard errors each."""
    n = 2000
    out = Engine(model).generate(
        [PROMPTS[1]] * n, SamplingParams(temperature=temperature, top_p=top_p, max_tokens=1, seed=3)
    )
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([PROMPTS[1]])).logits[0, -1].float() / temperature, -1)
    ranked, order = probs.sort(descending=True)
    keep = (ranked.cumsum(0) - ranked) < top_p
    expected = torch.zeros_like(probs).scatter_(0, order[keep], ranked[keep])
    expected /= expected.sum()
    counts = torch.bincount(torch.tensor([c.token_ids[0] for c in out]), minlength=probs.numel())
    assert (counts[expected == 0] == 0).all()  # never a token outside the nucleus
    se = (expected * (1 - expected) / n).sqrt()
    assert ((counts.float() / n - expected).abs() <= 4.5 * se + 1e-3).all()  # every token within 4.5 SE
