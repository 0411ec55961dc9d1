"""`RLTrainer.update` against a reference computed from its definition on the same rollouts: the loss it
reports, the train-vs-rollout mismatch statistics, micro-batching, gradient clipping, the loss settings,
skipped non-finite updates, and its errors."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from m1model.rl.losses import LossConfig, policy_loss
from m1model.rl.rollout import Group, RolloutBatch, collate
from m1model.rl.trainer import RLTrainer
from tests.rl.test_trainer import make_trainer


def make(model, **cfg) -> RLTrainer:
    settings = dict(group_size=4, prompts_per_step=4, updates_per_batch=1, max_sampling_rounds=1) | cfg
    return make_trainer(model, **settings)


@pytest.fixture(scope="module")
def rollouts() -> RolloutBatch:
    """One step's rollouts of the seed-0 tiny model: four informative groups, responses of 2-5 tokens."""
    from tests.rl.conftest import make_tiny_model

    model = make_tiny_model()
    batch = make(model, max_sampling_rounds=8).rollout()  # refills up to four informative groups
    assert len(batch.groups) == 4
    # As from an engine of another precision: rollout log-probs off by up to 0.1, so the update is off-policy
    # from its first step and the mismatch statistics measure something.
    for g in batch.groups:
        # Responses that stopped early, so the batch has padding: lengths 2 to 5.
        cut = [2 + (g.index + r) % 4 for r in range(len(g.responses))]
        g.responses = [row[:n] for row, n in zip(g.responses, cut, strict=True)]
        g.logprobs = [row[:n] for row, n in zip(g.logprobs, cut, strict=True)]
        g.finish_reasons = ["stop" if n < 5 else "length" for n in cut]
        g.logprobs = [
            [lp + 0.1 * math.sin(7 * g.index + 3 * r + t) for t, lp in enumerate(row)]
            for r, row in enumerate(g.logprobs)
        ]
    return batch


def reference(model, batch: RolloutBatch, loss_cfg: LossConfig) -> tuple[float, list[float], list[float]]:
    """The loss of the whole batch at once, and the training and rollout log-probs of its real response
    tokens."""
    data = collate(batch.groups, normalize_std=True)
    with torch.no_grad():
        logp = model.group_logprobs(
            data.prompt_ids, data.prompt_mask, data.response_ids, data.response_mask, data.group_index
        )
        loss, _ = policy_loss(
            "cispo",
            logp,
            data.old_logp,
            data.advantages,
            data.response_mask,
            loss_cfg,
            group_index=data.group_index,
        )
    real = data.response_mask > 0
    return float(loss), logp[real].double().tolist(), data.old_logp[real].double().tolist()


@pytest.mark.parametrize("micro_batch_size", [64, 4, 1])
def test_the_reported_loss_and_mismatch_are_those_of_the_whole_batch(
    rollouts, new_tiny_model, micro_batch_size
):
    """However the groups are split into micro-batches, the loss is the batch's Eq. 4 loss and the
    mismatch statistics cover every real response token (pads excluded)."""
    model = new_tiny_model()
    run = make(model, micro_batch_size=micro_batch_size)
    loss, train, infer = reference(model, rollouts, run.cfg.loss)
    metrics = run.update(copy.deepcopy(rollouts))
    assert metrics["loss"] == pytest.approx(loss, rel=1e-4, abs=1e-7)
    n = len(train)
    assert metrics["logprob_abs_diff"] == pytest.approx(
        sum(abs(x - y) for x, y in zip(train, infer, strict=True)) / n, rel=1e-4
    )
    mx, my = sum(train) / n, sum(infer) / n
    cov = sum((x - mx) * (y - my) for x, y in zip(train, infer, strict=True))
    var = math.sqrt(sum((x - mx) ** 2 for x in train) * sum((y - my) ** 2 for y in infer))
    assert metrics["logprob_corr"] == pytest.approx(cov / var, rel=1e-4)


def test_micro_batches_hold_at_most_micro_batch_size_sequences_but_whole_groups(rollouts, new_tiny_model):
    run = make(new_tiny_model(), micro_batch_size=8)  # two groups of 4 per forward
    rows, forward = [], run.parallel.group_logprobs
    run.parallel.group_logprobs = lambda *args, **kw: rows.append(len(args[2])) or forward(*args, **kw)
    run.update(copy.deepcopy(rollouts))
    assert sum(rows) == 4 * len(rollouts.groups) and max(rows) == 8
    small = make(new_tiny_model(), micro_batch_size=2)  # smaller than a group: one group per forward
    rows.clear()
    forward = small.parallel.group_logprobs
    small.parallel.group_logprobs = lambda *args, **kw: rows.append(len(args[2])) or forward(*args, **kw)
    small.update(copy.deepcopy(rollouts))
    assert rows == [4] * len(rollouts.groups)


def weights_after(model, batch, **cfg) -> dict[str, torch.Tensor]:
    make(model, updates_per_batch=2, **cfg).update(copy.deepcopy(batch))
    return {k: v.clone() for k, v in model.state_dict().items()}


def same(a, b) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_gradient_clipping_applies_below_one_and_is_off_at_zero(rollouts, new_tiny_model):
    """AdamW is blind to one step's gradient scale, so clipping shows over two updates of different norms."""
    off = weights_after(new_tiny_model(), rollouts, grad_clip=0.0)
    assert same(off, weights_after(new_tiny_model(), rollouts, grad_clip=1e9))
    assert not same(off, weights_after(new_tiny_model(), rollouts, grad_clip=1e-3))


def test_the_loss_settings_reach_the_loss(rollouts, new_tiny_model):
    """The second update is off-policy: CISPO's IS-weight bound changes it."""
    tight = weights_after(new_tiny_model(), rollouts, loss=LossConfig(eps_is_high=1e-4))
    assert not same(tight, weights_after(new_tiny_model(), rollouts, loss=LossConfig(eps_is_high=10.0)))
    assert not same(tight, weights_after(new_tiny_model(), rollouts, loss=LossConfig()))


def test_without_entropy_tracking_the_update_is_the_same(rollouts, new_tiny_model):
    with_entropy = make(new_tiny_model()).update(copy.deepcopy(rollouts))
    without = make(new_tiny_model(), track_entropy=False).update(copy.deepcopy(rollouts))
    assert "entropy" in with_entropy and "entropy" not in without
    assert without["loss"] == pytest.approx(with_entropy["loss"], rel=1e-5)


def test_a_non_finite_micro_batch_skips_the_whole_update(rollouts, new_tiny_model):
    """A NaN in each update's first micro-batch, finite ones after it: both updates are skipped and
    counted, and the weights stay as they were."""
    batch = copy.deepcopy(rollouts)
    for minibatch in np.array_split(np.arange(len(batch.groups)), 2):  # the groups of each update
        batch.groups[minibatch[0]].logprobs[0][0] = float("nan")
    model = new_tiny_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    metrics = make(model, updates_per_batch=2, micro_batch_size=4).update(batch)
    assert metrics["skipped_updates"] == 2.0
    assert same(before, model.state_dict())


def test_the_largest_gradient_norm_is_reported_beside_the_mean(rollouts, new_tiny_model):
    metrics = make(new_tiny_model(), updates_per_batch=3, grad_clip=0.0).update(copy.deepcopy(rollouts))
    assert metrics["grad_norm_max"] >= metrics["grad_norm"] > 0
    assert metrics["skipped_updates"] == 0.0


def test_an_update_without_groups_is_an_error(new_tiny_model):
    with pytest.raises(ValueError) as raised:
        make(new_tiny_model()).update(RolloutBatch(groups=[]))
    assert str(raised.value) == "update() needs at least one group on some rank"


def test_responses_that_end_at_once_train_nothing_and_break_nothing(rollouts, new_tiny_model):
    """An engine may stop at the first token: a micro-batch of only empty responses is a zero loss (it
    once reached the model as a zero-length forward and crashed the step)."""
    empty = Group(
        index=9,
        prompt=[1, 2],
        responses=[[]] * 4,
        logprobs=[[]] * 4,
        finish_reasons=["stop"] * 4,
        rewards=[0.0, 1.0, 0.0, 1.0],
    )
    model = new_tiny_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    metrics = make(model).update(RolloutBatch(groups=[copy.deepcopy(empty)]))
    assert metrics["loss"] == 0.0 and metrics["skipped_updates"] == 0.0
    assert same(before, model.state_dict())
    mixed = RolloutBatch(groups=[copy.deepcopy(empty), *copy.deepcopy(rollouts.groups)])
    assert math.isfinite(make(new_tiny_model(), micro_batch_size=4).update(mixed)["loss"])
