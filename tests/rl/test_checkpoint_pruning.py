"""A stage keeps `train.keep_checkpoints` step checkpoints as it goes (the newest; an older one goes only
once a newer one is complete), and the setting changes nothing a stage computes: a finished stage stays
done when it changes."""

from __future__ import annotations

import pytest

from flows.config import apply_overrides, load_config
from flows.curriculum.plan import stage_table
from flows.curriculum.stage import run_stage
from m1model.rl.checkpoint import list_checkpoints


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
    from flows.config import PipelineConfig

    with pytest.raises(ValueError, match="keep_checkpoints"):
        PipelineConfig.model_validate({"train": {"keep_checkpoints": 0}})
