"""RL invariants the end-to-end tests cannot see: the window's clamp at a limit that is not a whole number
of steps away, an update's gradient being independent of how it is cut into micro-batches, weights
pushed to an engine with its own copy, and the SFT warm start's loss, sampling and clipping."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from m1model import Engine
from m1model.rl.advantages import overlong_penalty
from m1model.rl.distributed import replica_engine
from m1model.rl.losses import sequence_level_weights
from m1model.rl.rollout import Group, PromptPool, RolloutBatch, score_groups
from m1model.rl.sft import SFTConfig, answer_nll, sft_batch, sft_warm_start
from m1model.rl.trainer import RLConfig, RLTrainer
from m1model.rl.window import LengthWindow

from .conftest import VOCAB, make_tiny_model


def test_window_widens_by_steps_and_clamps_at_a_limit_off_the_step_grid():
    """10 -> 14 -> 18 -> 20 with step 4 and limit 20: the last widening is the 2 tokens left, then none."""
    w = LengthWindow(10, limit=20, step=4, ppl_steps=1, ppl_tol=0.05)
    seen = []
    for _ in range(12):  # lengths at the window and a flat perplexity: both signals hold every other step
        m = w.observe(np.full(50, w.current), 1.0)
        seen.append((m["max_new_tokens"], m["window_widened"]))
    windows = [int(x) for x, widened in seen if widened]
    assert windows == [10, 14, 18]  # the windows that were widened from
    assert w.current == 20 and not w.widens
    assert max(x for x, _ in seen) == 20  # never past the limit, not even by a step
    assert seen[-1] == (20.0, 0.0)


def test_a_trainer_window_stops_at_its_limit():
    cfg = RLConfig(group_size=2, max_new_tokens=6, max_new_tokens_limit=11, window_step=4, window_ppl_steps=1)
    pool = PromptPool(prompts=[[1, 2]], items=[None])
    trainer = RLTrainer(make_tiny_model(), None, lambda items, rs: [0.0] * len(rs), pool, cfg)
    for _ in range(8):
        trainer.window.observe(np.full(20, trainer.max_new_tokens), 0.5)
    assert trainer.max_new_tokens == 11


def _groups(model, seed: int = 0) -> list[Group]:
    """Five groups of two responses with different lengths (1 to 9 tokens) and non-uniform rewards; old
    log-probs are the model's own, perturbed so that the IS weights differ from 1 (and some clip)."""
    gen = torch.Generator().manual_seed(seed)
    groups = []
    for g in range(5):
        prompt = torch.randint(1, VOCAB, (2 + g % 3,), generator=gen).tolist()
        responses, logprobs = [], []
        for r in range(2):
            n = 1 + (3 * g + 5 * r) % 9
            resp = torch.randint(1, VOCAB, (n,), generator=gen).tolist()
            with torch.no_grad():
                lp = model.token_logprobs(torch.tensor([prompt + resp]))[0, len(prompt) - 1 :]
            responses.append(resp)
            logprobs.append((lp + 0.8 * torch.randn(n, generator=gen)).tolist())
        rewards = [float(g % 2), float(1 - g % 2) + 0.25 * g]
        groups.append(Group(g, prompt, responses, logprobs, ["length"] * 2, rewards))
    return groups


def _update_gradient(micro_batch_size: int, algorithm: str) -> tuple[list[torch.Tensor], dict]:
    model = make_tiny_model(seed=1)
    cfg = RLConfig(
        algorithm=algorithm,
        group_size=2,
        prompts_per_step=5,
        updates_per_batch=1,
        grad_clip=0.0,  # no clipping: the gradient the optimizer sees is the raw one
        micro_batch_size=micro_batch_size,
    )
    pool = PromptPool(prompts=[[1]] * 5, items=[None] * 5)
    trainer = RLTrainer(model, Engine(model), lambda items, rs: [0.0] * len(rs), pool, cfg)
    grads: list[torch.Tensor] = []
    trainer.optimizer.register_step_pre_hook(
        lambda opt, args, kwargs: grads.extend(p.grad.clone() for p in model.parameters())
    )
    metrics = trainer.update(RolloutBatch(groups=_groups(make_tiny_model(seed=1))))
    assert metrics["skipped_updates"] == 0 and len(grads) == len(list(model.parameters()))
    return grads, metrics


@pytest.mark.parametrize("algorithm", ["cispo", "grpo"])
def test_micro_batching_does_not_change_the_update(algorithm):
    """One update over 5 groups: in one micro-batch, in 1-group micro-batches, and in uneven ones (2, 2, 1
    groups). The loss is a mean over groups of per-group normalised sums (Eq. 4), so each micro-batch must
    be weighted by its share of the groups: its token count, a plain sum or a plain mean of the
    micro-batch losses would each change the gradient."""
    whole, m_whole = _update_gradient(64, algorithm)
    assert sum(float(g.abs().sum()) for g in whole) > 0
    for micro in (2, 4):
        split, m_split = _update_gradient(micro, algorithm)
        for a, b in zip(whole, split, strict=True):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-7)
        assert m_split["grad_norm"] == pytest.approx(m_whole["grad_norm"], rel=1e-4)
        assert m_split["loss"] == pytest.approx(m_whole["loss"], rel=1e-4, abs=1e-7)


def test_sequence_level_weights_average_within_groups_of_unequal_size():
    """Eq. 1: mean over groups of each group's mean over responses of 1/|o_i| sum_t. With groups of 1
    and 2 responses, pooling all responses into one group would weight them 1/3 each instead."""
    mask = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0], [1, 0, 0, 0, 0]], dtype=torch.float32)
    w = sequence_level_weights(mask, torch.tensor([7, 9, 9]))
    assert w.sum(1).tolist() == [0.5, 0.25, 0.25]
    assert w[1].tolist() == [1 / 16] * 4 + [0.0]
    # Without group_index: one group of all 3 responses (3 rows, 5 columns: not square on purpose).
    assert sequence_level_weights(mask).sum(1).tolist() == pytest.approx([1 / 3] * 3)


def test_an_engine_with_its_own_weights_samples_from_the_updated_policy():
    """An engine holding a copy of the policy (the FSDP replica; vLLM alike) gets the weights after the
    update: otherwise every later batch would be sampled from the initial policy."""
    model = make_tiny_model()
    pool = PromptPool(prompts=[[1 + i, 2] for i in range(4)], items=list(range(4)))
    cfg = RLConfig(group_size=4, prompts_per_step=2, lr=1e-2, max_new_tokens=4, updates_per_batch=1)
    engine = replica_engine(model)
    trainer = RLTrainer(model, engine, lambda items, rs: [float(7 in r) for r in rs], pool, cfg)
    trainer.train_step()
    assert trainer.history[-1]["skipped_updates"] == 0
    before = make_tiny_model().state_dict()
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())
    for k, v in model.state_dict().items():
        assert torch.equal(engine.model.state_dict()[k], v), k


# What mutation testing showed the SFT and overlong-penalty tests left open: the SFT loss's sign and
# scale (a falling *negative* loss also "falls"), its sampling and step bookkeeping, and the penalty's
# smallest soft cache.

SFT_EXAMPLES = [([1, 5, 6], [9, 10, 2]), ([1, 7], [11, 2]), ([3], [4])]


def test_sft_reports_the_mean_answer_nll_and_lowers_it():
    model = make_tiny_model()
    batch = sft_batch(SFT_EXAMPLES, pad_id=0)
    with torch.no_grad():
        before = float(answer_nll(model, *batch))
    # batch_size = len(examples): the first batch is every example once (sampled without replacement)
    history = sft_warm_start(model, SFT_EXAMPLES, SFTConfig(steps=20, lr=1e-2, batch_size=3))
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
        sft_warm_start(make_tiny_model(), SFT_EXAMPLES, SFTConfig(steps=3, lr=1e-2, batch_size=5, seed=4))
        for _ in range(2)
    ]
    assert [h["loss"] for h in runs[0]] == [h["loss"] for h in runs[1]]


def test_sft_with_gradient_clipping_off_still_learns():
    model = make_tiny_model()
    history = sft_warm_start(model, SFT_EXAMPLES, SFTConfig(steps=10, lr=1e-2, batch_size=3, grad_clip=0.0))
    assert history[-1]["loss"] < 0.7 * history[0]["loss"]


def test_sft_input_errors():
    with pytest.raises(ValueError, match=r"^SFT needs at least one \(prompt, answer\) example$"):
        sft_warm_start(make_tiny_model(), [], SFTConfig(steps=1))
    with pytest.raises(
        ValueError, match=r"^every SFT example needs a non-empty prompt and a non-empty answer$"
    ):
        sft_warm_start(make_tiny_model(), [([], [4])], SFTConfig(steps=1))
    with pytest.raises(ValueError, match=r"^batch_size 0 is smaller than the 1 ranks$"):
        sft_warm_start(make_tiny_model(), SFT_EXAMPLES, SFTConfig(steps=1, batch_size=0))


def test_answer_nll_without_targets_is_zero_with_zero_gradient():
    model = make_tiny_model()
    ids, attn, target = sft_batch(SFT_EXAMPLES, pad_id=0)
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
        sft_warm_start(model, SFT_EXAMPLES, SFTConfig(steps=3, lr=1e-2, batch_size=3, grad_clip=clip))
        return model.state_dict()

    off, loose, tight = weights(0.0), weights(1e9), weights(1e-3)
    assert all(torch.equal(off[k], loose[k]) for k in off)
    assert any(not torch.allclose(off[k], tight[k]) for k in off)


def test_sft_reports_every_step_to_its_callback():
    seen = []
    history = sft_warm_start(make_tiny_model(), SFT_EXAMPLES, SFTConfig(steps=2, batch_size=3), seen.append)
    assert seen == history and len(seen) == 2


def test_rewards_see_the_item_of_each_response_and_the_replica_is_a_copy():
    groups = [Group(i, [1], [[2], [3]], [[0.0], [0.0]], ["length"] * 2, []) for i in (2, 0)]
    pool = PromptPool(prompts=[[1]] * 3, items=[10.0, 11.0, 12.0])
    score_groups(groups, pool, lambda items, rs: list(items), max_new_tokens=4, overlong_cache=0)
    assert [g.rewards for g in groups] == [[12.0, 12.0], [10.0, 10.0]]
    model = make_tiny_model()
    engine = replica_engine(model)  # its own weights: only the trainer's push may change them
    pairs = zip(model.parameters(), engine.model.parameters(), strict=True)
    assert all(a.data_ptr() != b.data_ptr() for a, b in pairs)
