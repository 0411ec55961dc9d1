"""Fast tests written from the survivors of m1model/rl's seeded mutation sample (issue 25): the
length-bias monitor's refusals and its records of items without a domain, a keep_last below one, the
zero-gradient step a rank without a micro-batch takes, and joining a torchrun group on a GPU node (CUDA
and the process group are recorded, not used)."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

import pytest
import torch

from m1model.rl import distributed
from m1model.rl.checkpoint import list_checkpoints, save_checkpoint
from m1model.rl.distributed import DataParallel
from m1model.rl.length_bias import LengthBias
from tests.rl.conftest import make_tiny_model
from tests.rl.test_length_growth import settings


def test_length_shaping_without_an_encoder_is_refused_and_says_why():
    with pytest.raises(ValueError, match=r"length shaping needs `encode` to measure the reference in tokens"):
        LengthBias(settings(shaping=True, shaping_coef=0.1))
    with pytest.raises(ValueError, match=r"the success rule needs `decode` to read the responses"):
        LengthBias(settings(), success=lambda items, texts: [None] * len(items))


def test_responses_to_items_without_a_domain_are_monitored_under_a_question_mark():
    lb = LengthBias(settings())
    shaped = lb.wrap(lambda items, responses: [1.0] * len(responses))
    shaped([{"prompt": "no domain"}, {"prompt": "no domain"}], [[1, 2], [3, 4, 5, 6]])
    metrics = lb.hook(SimpleNamespace(step=0), None)
    assert metrics["length_bias/?/length"] == 3.0
    assert metrics["length_bias/?/reward_raw"] == 1.0
    assert not any("None" in key for key in metrics)


@pytest.mark.parametrize("grouped", [False, True])
def test_the_dummy_backward_of_a_rank_without_a_micro_batch_leaves_every_gradient_zero(grouped):
    # the dummy row is token 0: not the padding token here, whose zero embedding would carry no gradient
    model = make_tiny_model(pad_token_id=1)
    parallel = DataParallel(model)
    parallel.dummy_backward(grouped=grouped)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads, "the forward and backward ran through the model"
    assert all(torch.count_nonzero(g) == 0 for g in grads)


def test_a_torchrun_rank_on_a_gpu_node_takes_its_local_rank_device_and_nccl(monkeypatch):
    calls = []
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: calls.append(("set_device", device)))
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(
        distributed.dist, "init_process_group", lambda backend, timeout: calls.append((backend, timeout))
    )
    monkeypatch.setattr(distributed, "current", lambda: "the group's context")
    assert distributed.init_from_env(timeout_s=60) == "the group's context"
    assert calls == [("set_device", 3), ("nccl", datetime.timedelta(seconds=60))]

    calls.clear()
    monkeypatch.delenv("LOCAL_RANK")
    distributed.init_from_env()
    assert calls == [("set_device", 0), ("nccl", datetime.timedelta(seconds=1800))]


@pytest.mark.parametrize("keep_last", [0, -1, -2])
def test_a_keep_last_below_one_keeps_every_checkpoint(tmp_path, keep_last):
    model = make_tiny_model()
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, model, {"step": step}, keep_last=keep_last)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000001", "step-000002", "step-000003"]
