"""The SFT warm start (loss on answer tokens only) and prompt sampling by mixture weight."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from m1model.rl.rollout import PromptPool
from m1model.rl.sft import SFTConfig, answer_nll, sft_batch, sft_warm_start

EXAMPLES = [([1, 5, 6], [9, 10, 2]), ([1, 7], [11, 2])]


def test_sft_batch_masks_exactly_the_answer_targets():
    ids, attn, target = sft_batch(EXAMPLES, pad_id=0)
    assert ids.tolist() == [[1, 5, 6, 9, 10, 2], [1, 7, 11, 2, 0, 0]]
    assert attn.tolist() == [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
    # target position t scores token t+1: the answer tokens only, never the prompt or padding
    assert target.tolist() == [[0, 0, 1, 1, 1], [0, 1, 1, 0, 0]]


def test_answer_nll_is_cross_entropy_on_answer_tokens(tiny_model):
    ids, attn, target = sft_batch(EXAMPLES, pad_id=0)
    logits = tiny_model(ids, attn).logits.float()
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    expected = (ce * target).sum() / target.sum()
    assert answer_nll(tiny_model, ids, attn, target).item() == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize("fp32_head", [True, False])
def test_scoring_only_the_answer_positions_equals_the_full_pass_there(new_tiny_model, fp32_head):
    """SFT runs the LM head at the answer tokens alone: the same log-probs, entropies and gradients
    there as the full pass, exact zeros elsewhere."""

    ids, attn, target = sft_batch(EXAMPLES, pad_id=0)
    positions = target > 0
    grads = []
    for only in (None, positions):
        model = new_tiny_model(fp32_lm_head=fp32_head)
        logp, entropy = model.token_logprobs(ids, attn, return_entropy=True, positions=only)
        if only is not None:
            assert logp[~positions].eq(0).all() and entropy[~positions].eq(0).all()
        logp, entropy = logp * positions, entropy * positions
        (logp.sum() + entropy.sum()).backward()
        grads.append((logp.detach(), entropy.detach(), [p.grad.clone() for p in model.parameters()]))
    (full_lp, full_ent, full_g), (lp, ent, g) = grads
    torch.testing.assert_close(lp, full_lp, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ent, full_ent, rtol=1e-5, atol=1e-6)
    for a, b in zip(g, full_g, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_sft_learns_the_answers(tiny_model):
    history = sft_warm_start(tiny_model, EXAMPLES, SFTConfig(steps=25, lr=1e-2, batch_size=2))
    assert all(h["finite"] == 1.0 for h in history)
    assert history[-1]["loss"] < 0.3 * history[0]["loss"]


def test_sft_rejects_empty_answers(tiny_model):
    with pytest.raises(ValueError, match="non-empty"):
        sft_warm_start(tiny_model, [([1], [])], SFTConfig(steps=1))


def test_prompt_pool_follows_weights():
    pool = PromptPool([[1], [2], [3]], ["a", "b", "c"], weights=[0.0, 3.0, 1.0])
    draws = [i for s in range(200) for i in pool.sample(1, np.random.default_rng(s))]
    assert 0 not in draws
    assert 0.65 < draws.count(1) / len(draws) < 0.85  # 3:1
    assert sorted(pool.sample(2, np.random.default_rng(0))) == [1, 2]  # distinct when possible
    with pytest.raises(ValueError, match="non-negative"):
        PromptPool([[1], [2]], ["a", "b"], weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="2 prompts but 1 items"):
        PromptPool([[1], [2]], ["a"])
