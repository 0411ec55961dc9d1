"""The SFT warm start (loss on answer tokens only) and prompt sampling by mixture weight."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from m1model.rl.rollout import PromptPool
from m1model.rl.sft import SFTConfig, answer_nll, length_micro_batches, sft_batch, sft_warm_start

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


def padded_cost(lengths, groups, overhead):
    return sum(len(g) * max(lengths[i] for i in g) + overhead for g in groups)


def test_length_micro_batches_cover_the_batch_and_pad_least():
    lengths = [75, 280, 60, 90, 70, 300, 64, 81]
    for overhead in (0, 50, 200, 10**6):
        groups = length_micro_batches(lengths, overhead)
        assert sorted(i for g in groups for i in g) == list(range(len(lengths)))  # each row once
        # each micro-batch is a run of the length-sorted order
        order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
        assert [i for g in groups for i in g] == order
        # the cheapest of every way to cut the sorted order (2^(n-1) of them, all tried)
        n = len(order)
        cheapest = min(
            padded_cost(lengths, [order[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)], overhead)
            for mask in range(2 ** (n - 1))
            for cuts in [[k + 1 for k in range(n - 1) if mask >> k & 1]]
        )
        assert padded_cost(lengths, groups, overhead) == cheapest
    assert length_micro_batches(lengths, 10**6) == [order]  # a huge overhead: one pass
    assert length_micro_batches(lengths, 100) == [[2, 6, 4, 0, 7, 3], [1, 5]]  # the two long rows apart
    assert length_micro_batches([5], 0) == [[0]] and length_micro_batches([], 0) == []


def test_micro_batches_give_the_whole_batchs_step(new_tiny_model):
    """Cut into micro-batches of like length, a step's gradient is the whole batch's, to float rounding.

    Top-2 routing: with top-1 the renormalised gate weight is 1 and the gate's gradient is rounding
    noise, which AdamW scales up to full-size steps whichever way the batch is cut."""
    examples = [([1, 5, 6, 7, 8, 9, 5, 6], [9, 10, 2]), ([1, 7], [11, 2]), ([1, 6], [12]), ([1] * 12, [9, 2])]
    finals = []
    for overhead in (10**9, 0):
        model = new_tiny_model(num_experts_per_tok=2)
        cfg = SFTConfig(steps=3, lr=1e-2, batch_size=4, seed=3, micro_batch_overhead_tokens=overhead)
        history = sft_warm_start(model, examples, cfg)
        finals.append((history, model.state_dict()))
    (whole, whole_w), (cut, cut_w) = finals
    assert [m["loss"] for m in cut] == pytest.approx([m["loss"] for m in whole], rel=1e-5)
    assert [m["grad_norm"] for m in cut] == pytest.approx([m["grad_norm"] for m in whole], rel=1e-4)
    for k in whole_w:
        torch.testing.assert_close(cut_w[k], whole_w[k], rtol=1e-4, atol=1e-6)


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
