"""`group_logprobs`: RL groups' prompts run once, with the log-probs and gradients of the concatenated rows;
right padding (training batches) takes the unmasked path with the same results at real tokens."""

from __future__ import annotations

import pytest
import torch

from .conftest import TINY_CONFIGS, tiny_model

ATOL = 1e-4  # as in test_model.py: summation order only; a state or alignment bug moves log-probs by O(1)


def _tokens(n: int, vocab: int, g: torch.Generator) -> list[int]:
    return torch.randint(3, vocab, (n,), generator=g).tolist()


def _groups(vocab: int, prompt_lens=(7, 12, 3), responses=((5, 1, 9), (2, 6), (4, 4, 8, 1)), seed=0):
    g = torch.Generator().manual_seed(seed)
    prompts = [_tokens(n, vocab, g) for n in prompt_lens]
    return prompts, [[_tokens(n, vocab, g) for n in lens] for lens in responses]


def _grouped_layout(prompts, responses):
    lp, lr = max(map(len, prompts)), max(len(r) for rs in responses for r in rs)
    p_ids, p_mask = (
        torch.zeros(len(prompts), lp, dtype=torch.long),
        torch.zeros(len(prompts), lp, dtype=torch.long),
    )
    for i, p in enumerate(prompts):
        p_ids[i, lp - len(p) :], p_mask[i, lp - len(p) :] = torch.tensor(p), 1
    rows = [(gi, r) for gi, rs in enumerate(responses) for r in rs]
    r_ids, r_mask = torch.zeros(len(rows), lr, dtype=torch.long), torch.zeros(len(rows), lr)
    for n, (_, r) in enumerate(rows):
        r_ids[n, : len(r)], r_mask[n, : len(r)] = torch.tensor(r), 1
    return p_ids, p_mask, r_ids, r_mask, torch.tensor([gi for gi, _ in rows])


def _concatenated(model, prompts, responses, return_entropy=False):
    """[N, R] log-probs of each response token from token_logprobs over right-padded prompt+response rows."""
    rows = [(p, r) for p, rs in zip(prompts, responses, strict=True) for r in rs]
    length = max(len(p) + len(r) for p, r in rows)
    lr = max(len(r) for _, r in rows)
    ids, mask = (
        torch.zeros(len(rows), length, dtype=torch.long),
        torch.zeros(len(rows), length, dtype=torch.long),
    )
    for n, (p, r) in enumerate(rows):
        ids[n, : len(p) + len(r)], mask[n, : len(p) + len(r)] = torch.tensor(p + r), 1
    out = model.token_logprobs(ids, mask, return_entropy=return_entropy)
    parts = out if return_entropy else (out,)
    result = []
    for t in parts:
        aligned = t.new_zeros(len(rows), lr)
        for n, (p, r) in enumerate(rows):
            aligned[n, : len(r)] = t[n, len(p) - 1 : len(p) + len(r) - 1]
        result.append(aligned)
    return tuple(result) if return_entropy else result[0]


@pytest.mark.parametrize("name", ["lightning_prefix_top2", "several_softmax_top1_gqa"])
def test_group_logprobs_equal_the_concatenated_rows_values_and_gradients(name):
    model = tiny_model(**TINY_CONFIGS[name])
    prompts, responses = _groups(model.config.vocab_size)
    layout = _grouped_layout(prompts, responses)
    logp, entropy = model.group_logprobs(*layout, return_entropy=True)
    ref_logp, ref_entropy = _concatenated(model, prompts, responses, return_entropy=True)
    torch.testing.assert_close(logp, ref_logp, atol=ATOL, rtol=0)
    torch.testing.assert_close(entropy, ref_entropy, atol=ATOL, rtol=0)
    assert bool((logp[layout[3] == 0] == 0).all()) and bool((logp[layout[3] > 0] < 0).all())

    weights = torch.randn(logp.shape, generator=torch.Generator().manual_seed(5))
    params = list(model.parameters())
    ours = torch.autograd.grad((model.group_logprobs(*layout) * weights).sum(), params)
    ref = torch.autograd.grad((_concatenated(model, prompts, responses) * weights).sum(), params)
    for (pname, _), a, b in zip(model.named_parameters(), ours, ref, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=1e-3, msg=lambda m, pname=pname: f"{pname}: {m}")
    assert any(
        a.abs().sum() > 0 for a in ours[:3]
    )  # the prompt's share of the gradient reaches the embeddings


def test_group_logprobs_refuse_prompts_padded_on_the_right_and_responses_on_the_left():
    model = tiny_model(**TINY_CONFIGS["lightning_prefix_top2"])
    p_ids, p_mask, r_ids, r_mask, index = _grouped_layout(*_groups(model.config.vocab_size))
    with pytest.raises(ValueError, match="left-padded prompts"):
        model.group_logprobs(p_ids, p_mask.flip(1), r_ids, r_mask, index)
    with pytest.raises(ValueError, match="right-padded responses"):
        model.group_logprobs(p_ids, p_mask, r_ids, r_mask.flip(1), index)


def test_right_padding_gives_the_unpadded_results_at_real_tokens():
    """A training batch is right-padded: the unmasked path must still give each row's own results."""
    model = tiny_model(**TINY_CONFIGS["several_softmax_top1_gqa"])
    g = torch.Generator().manual_seed(2)
    rows = [_tokens(n, model.config.vocab_size, g) for n in (4, 17, 11)]
    ids, mask = torch.zeros(3, 17, dtype=torch.long), torch.zeros(3, 17, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    with torch.no_grad():
        batch = model(ids, attention_mask=mask).logits
        logp = model.token_logprobs(ids, mask)
        for i, r in enumerate(rows):
            alone = model(torch.tensor([r])).logits[0]
            torch.testing.assert_close(batch[i, : len(r)], alone, atol=ATOL, rtol=0)
            torch.testing.assert_close(
                logp[i, : len(r) - 1], model.token_logprobs(torch.tensor([r]))[0], atol=ATOL, rtol=0
            )
            assert bool((logp[i, len(r) - 1 :] == 0).all())  # targets that are padding
