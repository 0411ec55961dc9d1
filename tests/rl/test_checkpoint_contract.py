"""Checkpoints in detail: where and how a checkpoint is written and pruned, what the trainer state holds,
what `resume` restores (a given path, hooks' own state, each rank's RNG stream), and RLConfig's checks."""

from __future__ import annotations

import pytest
import torch

from m1model.rl import checkpoint
from m1model.rl.checkpoint import latest_checkpoint, list_checkpoints, load_state, rng_state, save_checkpoint
from m1model.rl.trainer import RLConfig, RLTrainer
from tests.rl.test_trainer import make_trainer


def names(root) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def test_checkpoints_are_assembled_hidden_beside_their_place_and_pruned_to_the_newest(
    tmp_path, tiny_model, monkeypatch
):
    """A rename is atomic only within one filesystem: the checkpoint is written next to its final name,
    hidden, and named after it; the default keeps the newest two; parents are created."""
    root = tmp_path / "runs" / "a" / "checkpoints"
    seen = []
    real_save = torch.save
    monkeypatch.setattr(torch, "save", lambda obj, path: seen.append(path) or real_save(obj, path))
    for step in (1, 2, 3):
        save_checkpoint(root, step, tiny_model, {"step": step})
    assert [p.parent.parent for p in seen] == [root] * 3
    assert all(p.parent.name.startswith(f".step-00000{s}.") for s, p in zip((1, 2, 3), seen, strict=True))
    assert names(root) == ["step-000002", "step-000003"]  # no hidden leftovers either


def test_keep_last_zero_keeps_every_checkpoint(tmp_path, tiny_model):
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, tiny_model, {"step": step}, keep_last=0)
    assert names(tmp_path) == ["step-000001", "step-000002", "step-000003"]


def test_a_failed_save_leaves_nothing_and_keeps_the_previous_checkpoint(tmp_path, tiny_model, monkeypatch):
    save_checkpoint(tmp_path, 1, tiny_model, {"step": 1})

    def disk_full(obj, path):
        raise OSError("no space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    with pytest.raises(OSError, match="no space left"):
        save_checkpoint(tmp_path, 2, tiny_model, {"step": 2})
    assert names(tmp_path) == ["step-000001"]
    assert latest_checkpoint(tmp_path) == tmp_path / "step-000001"


def test_given_weights_are_the_ones_saved(tmp_path, new_tiny_model):
    """What FSDP's trainer passes: the gathered whole weights, not the (sharded) module's own."""
    from m1model import M1ForCausalLM

    model, other = new_tiny_model(seed=0), new_tiny_model(seed=1)
    path = save_checkpoint(tmp_path, 1, model, {"step": 1}, state_dict=other.state_dict())
    loaded = M1ForCausalLM.from_pretrained(path / checkpoint.MODEL_DIR).state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in other.state_dict().items())


def test_a_deletion_killed_half_way_does_not_block_the_next_one(tmp_path, tiny_model):
    """A kill during `_remove` leaves ``.step-N.removing``; the next removal of step N clears it first."""
    for step in (1, 2):
        save_checkpoint(tmp_path, step, tiny_model, {"step": step}, keep_last=0)
    leftover = tmp_path / ".step-000001.removing"
    (leftover / "model").mkdir(parents=True)
    (leftover / "model" / "part").write_bytes(b"x")
    save_checkpoint(tmp_path, 3, tiny_model, {"step": 3}, keep_last=2)
    assert names(tmp_path) == ["step-000002", "step-000003"]


def test_the_trainer_state_loads_only_tensors_and_plain_data(tmp_path, tiny_model):
    """`torch.load(weights_only=True)`: a trainer.pt that would run code when unpickled is refused."""
    path = save_checkpoint(tmp_path, 1, tiny_model, {"step": 1, "rng": rng_state()})
    assert load_state(path)["step"] == 1
    torch.save({"step": 1, "payload": Exploit()}, path / checkpoint.STATE_FILE)
    with pytest.raises(Exception, match="Weights only load failed"):
        load_state(path)


class Exploit:
    def __reduce__(self):
        return (print, ("unpickling ran code",))


class Counter:
    """A step hook with state of its own (as the dynamic mixture has)."""

    def __init__(self, start: int = 0):
        self.calls = start

    def __call__(self, trainer, batch):
        self.calls += 1

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]


def stateless_hook(trainer, batch):
    return None


def trainer(model, checkpoint_dir=None, hooks=(), keep_last=2) -> RLTrainer:
    options = {"step_hooks": hooks, "keep_last": keep_last}
    return make_trainer(model, checkpoint_dir, options, updates_per_batch=1, group_size=2, prompts_per_step=2)


def test_the_trainer_state_holds_what_resume_reads(tmp_path, tiny_model):
    run = trainer(tiny_model, tmp_path, hooks=[Counter(), stateless_hook])
    run.train(1)
    rng = rng_state()
    state = load_state(run.save())
    assert set(state) == {
        "step",
        "window",
        "hooks",
        "pool_weights",
        "optimizer",
        "rng",
        "rng_ranks",
        "history",
    }
    assert state["hooks"] == [{"calls": 1}, None]
    assert torch.equal(state["rng"]["torch"], rng["torch"])
    assert len(state["rng_ranks"]) == 1 and torch.equal(state["rng_ranks"][0]["torch"], rng["torch"])


def test_save_and_resume_honour_the_given_folder_and_path(tmp_path, new_tiny_model):
    run = trainer(new_tiny_model(), tmp_path / "default", keep_last=1)
    with pytest.raises(ValueError, match=r"^no checkpoint directory: pass one to RLTrainer or save\(\)$"):
        trainer(new_tiny_model()).save()
    run.train(1)
    first = run.save(tmp_path / "elsewhere")
    assert first == tmp_path / "elsewhere" / "step-000001" and list_checkpoints(tmp_path / "elsewhere") == [
        first
    ]
    run.train(2)
    run.save()
    run.train(3)
    run.save()
    assert list_checkpoints(tmp_path / "default") == [tmp_path / "default" / "step-000003"]  # keep_last=1

    resumed = trainer(new_tiny_model(seed=5), tmp_path / "default")
    assert resumed.resume(first) and resumed.step == 1  # the path given, not the latest


def test_resume_without_a_checkpoint_is_false(tmp_path, tiny_model):
    assert trainer(tiny_model).resume() is False  # no checkpoint folder at all
    assert trainer(tiny_model, tmp_path / "empty").resume() is False


def test_resume_restores_each_hooks_own_state(tmp_path, new_tiny_model):
    """Hooks are matched by position; a hook saved without state, or one added since, starts fresh."""
    run = trainer(new_tiny_model(), tmp_path, hooks=[Counter(), stateless_hook])
    run.train(2)
    run.save()
    counter, added, late = Counter(), Counter(start=7), Counter(start=9)
    resumed = trainer(new_tiny_model(), tmp_path, hooks=[counter, added, late])
    assert resumed.resume()
    assert (counter.calls, added.calls, late.calls) == (2, 7, 9)


def test_each_rank_resumes_its_own_rng_stream(tmp_path, new_tiny_model):
    """``rng_ranks`` (one per rank) wins over ``rng`` when the world size matches; otherwise ``rng``."""
    run = trainer(new_tiny_model(), tmp_path)
    run.train(1)
    path = run.save()
    state = load_state(path)
    torch.manual_seed(11)
    own = rng_state()
    torch.manual_seed(12)
    shared = rng_state()
    torch.save(state | {"rng_ranks": [own], "rng": shared}, path / checkpoint.STATE_FILE)
    trainer(new_tiny_model(), tmp_path).resume()
    assert torch.equal(torch.get_rng_state(), own["torch"])
    torch.save(
        state | {"rng_ranks": [own, own], "rng": shared}, path / checkpoint.STATE_FILE
    )  # 2 ranks wrote it
    trainer(new_tiny_model(), tmp_path).resume()
    assert torch.equal(torch.get_rng_state(), shared["torch"])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group_size": 1}, "group_size must be >= 2: advantages are relative to the group"),
        ({"max_new_tokens": 8, "max_new_tokens_limit": 7}, "max_new_tokens_limit must be >= max_new_tokens"),
        ({"prompts_per_step": 0}, "prompts_per_step, updates_per_batch and max_sampling_rounds must be >= 1"),
        (
            {"updates_per_batch": 0},
            "prompts_per_step, updates_per_batch and max_sampling_rounds must be >= 1",
        ),
        (
            {"max_sampling_rounds": 0},
            "prompts_per_step, updates_per_batch and max_sampling_rounds must be >= 1",
        ),
    ],
)
def test_rl_config_refuses_impossible_settings(settings, message):
    with pytest.raises(ValueError) as raised:
        RLConfig(**settings)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "settings",
    [
        {"group_size": 2},
        {"max_new_tokens": 8, "max_new_tokens_limit": 8},
        {"prompts_per_step": 1, "updates_per_batch": 1, "max_sampling_rounds": 1},
    ],
)
def test_rl_config_accepts_the_smallest_valid_settings(settings):
    RLConfig(**settings)


def test_a_checkpoint_from_before_hooks_and_rank_rngs_were_saved_still_resumes(tmp_path, new_tiny_model):
    run = trainer(new_tiny_model(), tmp_path, hooks=[Counter()])
    run.train(1)
    path = run.save()
    state = load_state(path)
    old = {k: v for k, v in state.items() if k not in ("hooks", "pool_weights", "rng_ranks")}
    torch.save(old, path / checkpoint.STATE_FILE)
    counter = Counter(start=4)
    resumed = trainer(new_tiny_model(), tmp_path, hooks=[counter])
    assert resumed.resume() and resumed.step == 1
    assert counter.calls == 4  # nothing saved for it: unchanged
    assert torch.equal(torch.get_rng_state(), state["rng"]["torch"])
