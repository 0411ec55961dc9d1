"""What mutation testing showed the SFT and overlong-penalty tests left open: the SFT loss's sign and
scale (a falling *negative* loss also "falls"), its sampling and step bookkeeping, and the penalty's
smallest soft cache."""

from __future__ import annotations

import pytest
import torch

from m1model.rl.advantages import overlong_penalty
from m1model.rl.sft import SFTConfig, answer_nll, sft_batch, sft_warm_start

from .conftest import make_tiny_model

EXAMPLES = [([1, 5, 6], [9, 10, 2]), ([1, 7], [11, 2]), ([3], [4])]


def test_sft_reports_the_mean_answer_nll_and_lowers_it():
    model = make_tiny_model()
    batch = sft_batch(EXAMPLES, pad_id=0)
    with torch.no_grad():
        before = float(answer_nll(model, *batch))
    # batch_size = len(examples): the first batch is every example once (sampled without replacement)
    history = sft_warm_start(model, EXAMPLES, SFTConfig(steps=20, lr=1e-2, batch_size=3))
    assert history[0]["loss"] == pytest.approx(before, rel=1e-5)  # a positive mean NLL per answer token
    with torch.no_grad():
        after = float(answer_nll(model, *batch))
    assert after < 0.3 * before and history[-1]["loss"] > 0
    assert [h["step"] for h in history] == [float(s) for s in range(1, 21)]
    assert all(h["finite"] == 1.0 and h["grad_norm"] > 0 for h in history)


def test_sft_on_one_single_token_answer_is_its_nll():
    model = make_tiny_model()
    one = [([3, 5], [4])]
    with torch.no_grad():
        expected = float(answer_nll(model, *sft_batch(one, pad_id=0)))
    (step,) = sft_warm_start(model, one, SFTConfig(steps=1, batch_size=1))
    assert step["loss"] == pytest.approx(expected, rel=1e-5)


def test_sft_is_reproducible_from_its_seed_and_samples_with_replacement_only_when_needed():
    runs = [
        sft_warm_start(make_tiny_model(), EXAMPLES, SFTConfig(steps=3, lr=1e-2, batch_size=5, seed=4))
        for _ in range(2)
    ]
    assert [h["loss"] for h in runs[0]] == [h["loss"] for h in runs[1]]


def test_sft_with_gradient_clipping_off_still_learns():
    model = make_tiny_model()
    history = sft_warm_start(model, EXAMPLES, SFTConfig(steps=10, lr=1e-2, batch_size=3, grad_clip=0.0))
    assert history[-1]["loss"] < 0.7 * history[0]["loss"]


def test_sft_input_errors():
    with pytest.raises(ValueError, match=r"^SFT needs at least one \(prompt, answer\) example$"):
        sft_warm_start(make_tiny_model(), [], SFTConfig(steps=1))
    with pytest.raises(
        ValueError, match=r"^every SFT example needs a non-empty prompt and a non-empty answer$"
    ):
        sft_warm_start(make_tiny_model(), [([], [4])], SFTConfig(steps=1))
    with pytest.raises(ValueError, match=r"^batch_size 0 is smaller than the 1 ranks$"):
        sft_warm_start(make_tiny_model(), EXAMPLES, SFTConfig(steps=1, batch_size=0))


def test_answer_nll_without_targets_is_zero_with_zero_gradient():
    model = make_tiny_model()
    ids, attn, target = sft_batch(EXAMPLES, pad_id=0)
    loss = answer_nll(model, ids, attn, torch.zeros_like(target))
    assert float(loss.detach()) == 0.0
    loss.backward()
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())


def test_overlong_penalty_smallest_caches():
    lengths = torch.tensor([8, 9, 10, 11])
    # cache 1: the one token before max_len is free, max_len itself gets the full -1
    assert overlong_penalty(lengths, max_len=10, cache_len=1).tolist() == [0.0, 0.0, -1.0, -1.0]
    # cache 0: a hard cut, -1 only beyond max_len
    assert overlong_penalty(lengths, max_len=10, cache_len=0).tolist() == [0.0, 0.0, 0.0, -1.0]
    with pytest.raises(ValueError, match=r"^need 0 <= cache_len < max_len, got cache_len=-1, max_len=10$"):
        overlong_penalty(lengths, max_len=10, cache_len=-1)


def test_sft_gradient_clipping_is_applied_when_set():
    """AdamW hides a constant gradient scale but not a per-step one: a tight clip changes the weights
    after a few steps, while a clip far above the gradient norm changes nothing."""

    def weights(clip: float) -> dict[str, torch.Tensor]:
        model = make_tiny_model()
        sft_warm_start(model, EXAMPLES, SFTConfig(steps=3, lr=1e-2, batch_size=3, grad_clip=clip))
        return model.state_dict()

    off, loose, tight = weights(0.0), weights(1e9), weights(1e-3)
    assert all(torch.equal(off[k], loose[k]) for k in off)
    assert any(not torch.allclose(off[k], tight[k]) for k in off)
