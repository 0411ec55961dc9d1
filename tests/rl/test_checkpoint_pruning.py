"""A stage keeps `train.keep_checkpoints` step checkpoints as it goes (the newest; an older one goes only
once a newer one is complete), and the setting changes nothing a stage computes: a finished stage stays
done when it changes."""

from __future__ import annotations

import pytest

from flows.config import PipelineConfig, apply_overrides, load_config
from flows.curriculum.plan import stage_table
from flows.curriculum.stage import run_stage
from m1model.rl.checkpoint import list_checkpoints, save_checkpoint


@pytest.mark.parametrize("keep", [1, 3])
def test_a_stage_prunes_old_step_checkpoints_as_it_goes(tiny_stage, keep):
    path, _, folder = tiny_stage(steps=5, checkpoint_every=1, keep_checkpoints=keep)
    config = load_config(path)
    present: list[list[int]] = []

    def on_step(phase: str, metrics: dict) -> None:
        if phase == "a":  # after the step's checkpoint was written
            present.append([int(p.name.split("-")[1]) for p in list_checkpoints(folder / "checkpoints")])

    run_stage(config, "a", on_step=on_step)
    assert present == [list(range(max(1, step - keep + 1), step + 1)) for step in range(1, 6)]
    assert sorted(
        p.name for p in (folder / "checkpoints").iterdir() if p.name.startswith(("step-", "."))
    ) == [f"step-{s:06d}" for s in range(6 - keep, 6)]
    assert stage_table(apply_overrides(config, [f"train.keep_checkpoints={keep + 4}"]))[0]["state"] == "done"


def test_keep_checkpoints_is_at_least_one():
    with pytest.raises(ValueError, match="keep_checkpoints"):
        PipelineConfig.model_validate({"train": {"keep_checkpoints": 0}})


def test_the_old_checkpoints_stay_when_the_new_one_cannot_be_written(tmp_path, tiny_model, monkeypatch):
    """A full disk while the newest checkpoint is written: the ones before it are all still there."""
    for step in (1, 2):
        save_checkpoint(tmp_path, step, tiny_model, {"step": step}, keep_last=2)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tiny_model, "save_pretrained", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(tmp_path, 3, tiny_model, {"step": 3}, keep_last=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000001", "step-000002"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-000001", "step-000002"]  # no temporary left
