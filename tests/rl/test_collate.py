"""The trainer's batch layout: each group's prompt once (left-padded), its responses right-padded and aligned
with their old log-probs, and micro-batches that carry exactly their own groups' prompts."""

from __future__ import annotations

import pytest
import torch

from m1model.rl.rollout import Group, collate


def _group(index, prompt, responses, rewards):
    logprobs = [[-0.1 * (t + 1) - index for t in range(len(r))] for r in responses]
    return Group(index, prompt, responses, logprobs, ["stop"] * len(responses), rewards)


GROUPS = [
    _group(0, [5, 6, 7], [[10], [11, 12, 13]], [1.0, 0.0]),
    _group(1, [8], [[14, 15], [16, 17, 18, 19]], [0.0, 0.0]),
    _group(2, [9, 9, 9, 9, 9], [[20, 21], [22]], [0.0, 1.0]),
]


def test_collate_puts_each_prompt_once_left_padded_and_aligns_responses():
    data = collate(GROUPS, normalize_std=False, pad_id=0)
    assert data.prompt_ids.tolist() == [[0, 0, 5, 6, 7], [0, 0, 0, 0, 8], [9, 9, 9, 9, 9]]
    assert data.prompt_mask.tolist() == [[0, 0, 1, 1, 1], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1]]
    assert data.response_ids.tolist() == [
        [10, 0, 0, 0],
        [11, 12, 13, 0],
        [14, 15, 0, 0],
        [16, 17, 18, 19],
        [20, 21, 0, 0],
        [22, 0, 0, 0],
    ]
    assert data.response_mask.tolist() == [
        [1.0 if t else 0.0 for t in row] for row in data.response_ids.tolist()
    ]
    torch.testing.assert_close(data.old_logp[3], torch.tensor([-1.1, -1.2, -1.3, -1.4]))
    assert data.old_logp[0, 1:].tolist() == [0.0, 0.0, 0.0]
    assert data.group_index.tolist() == [0, 0, 1, 1, 2, 2]
    assert data.advantages.tolist() == [0.5, -0.5, 0.0, 0.0, -0.5, 0.5]


def test_rows_keep_their_groups_prompts_renumbered_and_trimmed():
    data = collate(GROUPS, normalize_std=False, pad_id=0)
    sub = data.rows(torch.tensor([2, 3, 0, 1]))  # groups 1 and 0, in the micro-batch's row order
    assert sub.group_index.tolist() == [1, 1, 0, 0]  # groups renumbered 0, 1 in ascending order
    assert sub.prompt_ids.tolist() == [[5, 6, 7], [0, 0, 8]]  # trimmed to the longest prompt among them
    assert sub.prompt_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert sub.response_ids.tolist() == [[14, 15, 0, 0], [16, 17, 18, 19], [10, 0, 0, 0], [11, 12, 13, 0]]
    short = data.rows(torch.tensor([4, 5]))
    assert short.prompt_ids.tolist() == [[9, 9, 9, 9, 9]] and short.group_index.tolist() == [0, 0]
    assert short.response_ids.tolist() == [[20, 21], [22, 0]]  # trimmed to the longest response
    assert short.old_logp.shape == short.response_mask.shape == (2, 2)
    assert short.advantages.tolist() == [-0.5, 0.5]


def test_collate_refuses_logprobs_that_do_not_match_the_tokens():
    bad = _group(0, [5], [[10, 11], [12]], [1.0, 0.0])
    bad.logprobs[0] = [-0.5]
    with pytest.raises(ValueError, match="1 logprobs for 2 tokens"):
        collate([bad], normalize_std=False)


def test_collate_pads_with_0_by_default_and_normalises_by_the_group_std_when_asked():
    data = collate(GROUPS, normalize_std=True)
    assert data.prompt_ids[1].tolist() == [0, 0, 0, 0, 8] and data.response_ids[0].tolist() == [10, 0, 0, 0]
    # group 0: rewards (1, 0), mean 0.5, unbiased std 0.7071: advantages +-0.7071; all-equal groups 0
    torch.testing.assert_close(
        data.advantages, torch.tensor([0.7071, -0.7071, 0.0, 0.0, -0.7071, 0.7071]), atol=1e-4, rtol=0
    )


def test_collate_of_one_token_responses_has_one_response_column():
    groups = [_group(0, [5], [[10], [11]], [1.0, 0.0])]
    data = collate(groups, normalize_std=False)
    assert data.response_ids.tolist() == [[10], [11]] and data.response_mask.shape == (2, 1)


def test_collate_refuses_a_group_with_fewer_logprob_lists_than_responses():
    bad = _group(0, [5], [[10], [11]], [1.0, 0.0])
    bad.logprobs = bad.logprobs[:1]
    with pytest.raises(ValueError, match="shorter"):
        collate([bad], normalize_std=False)
