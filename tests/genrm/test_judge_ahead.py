"""The run's judge trained ahead (flows/genrm/ahead.py): a child process trains it from the start of
`m1 run` with the same cached `ensure_judge`; `general_tasks` waits for it, relays its steps and finds it
trained; a child that fails leaves the training to the flow; an early end of the run stops the child;
and nothing trains ahead where nothing would be trained (a current judge, a user's judge, genrm off)."""

from __future__ import annotations

import json
import logging
import time

import pytest

from flows.config import PipelineConfig
from flows.genrm import ahead
from flows.genrm.files import judge_dir
from flows.genrm.judge_cache import ensure_judge, judge_is_current
from tests.genrm.test_judge_training_and_plot import TINY_JUDGE
from tests.rl.test_curriculum_stage_run import Lines

STEPS = 400  # long enough (a few seconds) for the wait to see the training go on


@pytest.fixture
def config(tmp_path):
    genrm = {
        "train_prompts": 4,
        "eval_prompts": 2,
        "judge_steps": STEPS,
        "judge_batch_size": 2,
        "judge_max_tokens": 2,
        "judge_model": TINY_JUDGE.model_dump(),
    }
    return PipelineConfig(name="ahead", home=str(tmp_path / "home"), genrm=genrm)


def test_the_judge_trains_in_a_child_while_the_run_goes_on_and_the_flow_finds_it_trained(config):
    folder = judge_dir(config)
    assert ahead.wanted(config)
    steps: list[float] = []
    with ahead.judge_ahead(config):
        child = ahead._AHEAD[folder.resolve()].process
        assert child.is_alive() and child.pid is not None  # another process, started at once
        assert ahead.wait_for_judge(folder, lambda m: steps.append(m["step"])) is True
        assert not child.is_alive()
    assert len(steps) > 1 and steps == sorted(steps) and steps[-1] == STEPS  # relayed as it trained
    summary, trained = ensure_judge(folder, config.genrm)
    assert trained is False  # the child's checkpoint, from these inputs: nothing left to train
    assert summary["config"]["judge_steps"] == STEPS
    assert (
        json.loads((folder / "training.json").read_text())["judge"]["inputs_hash"] == summary["inputs_hash"]
    )
    assert judge_is_current(config) and not ahead.wanted(config)  # a rerun trains nothing ahead
    assert ahead.wait_for_judge(folder) is None  # and has nothing to wait for


def test_a_child_that_fails_leaves_the_training_to_the_flow(config, monkeypatch, prefect_harness):
    from flows.genrm.flow import general_tasks

    lines = Lines()
    logging.getLogger("prefect.flow_runs").addHandler(lines)
    monkeypatch.setattr(logging.getLogger("prefect.flow_runs"), "level", logging.INFO)
    monkeypatch.setenv("M1_GENRM_ATTEMPTS", "many")  # the child's evaluation refuses it and the child fails
    with ahead.judge_ahead(config):
        monkeypatch.delenv("M1_GENRM_ATTEMPTS")  # the run's own process is fine
        out = general_tasks(config)
    assert out["trained"] is True and judge_is_current(config)
    logging.getLogger("prefect.flow_runs").removeHandler(lines)
    assert any("its training beside the run failed; training it now" in m for m in lines.messages)


def test_an_early_end_of_the_run_stops_the_child(config):
    config.genrm.judge_steps = 100_000  # would take far longer than the test
    with pytest.raises(KeyboardInterrupt), ahead.judge_ahead(config):
        child = ahead._AHEAD[judge_dir(config).resolve()].process
        time.sleep(1)
        raise KeyboardInterrupt  # Ctrl-C in the run
    assert not child.is_alive() and child.exitcode is not None
    assert not (judge_dir(config) / "training.json").exists()
    assert ahead._AHEAD == {}


def test_nothing_trains_ahead_where_nothing_would_be_trained(config, monkeypatch):
    assert ahead.wanted(config)
    assert not ahead.wanted(
        config.model_copy(update={"genrm": config.genrm.model_copy(update={"enabled": False})})
    )
    init = config.genrm.model_copy(update={"judge_init": "/some/checkpoint"})  # may be the run's own base
    assert not ahead.wanted(config.model_copy(update={"genrm": init}))
    monkeypatch.setenv("M1_GENRM_URL", "http://127.0.0.1:9/v1")  # the user's judge: measured, not trained
    assert not ahead.wanted(config)
    with ahead.judge_ahead(config):
        assert ahead._AHEAD == {}
