"""A job whose ranks all finished is complete even when a rank then dies in the process group's teardown
(a SIGABRT in gloo's threads, seen on a loaded CI machine): the launcher returns its result and says what
happened; a rank that dies before it finished still fails the launch. Real torchrun, two ranks."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import flows.curriculum.launch as launch
from flows.config import PipelineConfig


@pytest.fixture
def two_ranks(tmp_path, monkeypatch):
    monkeypatch.setattr(launch, "WORKER", "teardown_worker")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # the agent's and the ranks' import path
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return PipelineConfig.model_validate({"home": str(tmp_path), "train": {"nproc": 2, "batch_size": 2}})


def test_a_rank_that_aborts_after_it_finished_leaves_a_complete_job(two_ranks, caplog):
    with caplog.at_level(logging.WARNING, logger="m1.train"):
        result = launch.launch("stage", two_ranks, stage="teardown")
    assert result == {"ranks": 2}
    warned = [r.getMessage() for r in caplog.records if "after every rank had finished" in r.getMessage()]
    assert warned and "torchrun exit 1" in warned[0]


def test_a_rank_that_aborts_before_it_finished_fails_the_launch(two_ranks):
    with pytest.raises(RuntimeError, match=r"training on 2 processes failed \(torchrun exit 1\)"):
        launch.launch("stage", two_ranks, stage="job")


def test_finished_needs_the_result_and_every_rank(tmp_path):
    assert not launch.finished(tmp_path, 2)
    (tmp_path / "result.json").write_text("{}")
    (tmp_path / launch.finished_marker(0)).touch()
    assert not launch.finished(tmp_path, 2)  # rank 1 never got past the barrier
    (tmp_path / launch.finished_marker(1)).touch()
    assert launch.finished(tmp_path, 2)
    (tmp_path / "result.json").unlink()
    assert not launch.finished(tmp_path, 2)
