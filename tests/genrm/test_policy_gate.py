"""The judge's second gate (flows/curriculum/policy_gate.py): its order of the starting checkpoint's own
answers beside the rule grade, measured once per judge, checkpoint and settings, read by the plan."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from flows.config import PipelineConfig
from flows.curriculum import load_curriculum
from flows.curriculum.judge_on_policy import PolicyOrder
from flows.curriculum.plan import active_curriculum, general_gate
from flows.curriculum.policy_gate import (
    RECORD,
    measure,
    measure_inputs,
    passed,
    policy_gate,
    unmeasured,
)
from flows.genrm.files import genrm_root
from flows.lineage import fingerprint
from m1model.rl.length_bias import RuleOrder
from tests.genrm.scripted import scripted_judge


def _order(right, wrong, tied, low, high):
    return PolicyOrder(
        RuleOrder(right, wrong, tied), low, high, prompts=64, answers=512, rule_grades={5: 3, 1: 5}
    )


def test_the_gate_asks_the_margin_above_a_constant_judge_and_the_interval_above_it():
    assert _order(90, 10, 0, 0.85, 0.95).gate(0.10) is None
    assert _order(60, 40, 0, 0.51, 0.69).gate(0.10) is None  # 0.60 exactly, interval above 0.5
    # the default judge on seed 0's warm start (flows/genrm/README.md): 0.57, above 0.5 but not by 0.10
    why = _order(622, 245, 1810, 0.545, 0.596).gate(0.10)
    assert (
        why.startswith("it orders 0.570 of the pairs") and "asks 0.10 above a constant judge's 0.5 and" in why
    )
    assert "622 as the rule, 245 the other way, 1810 tied" in why and "95% 0.545-0.596" in why
    assert _order(0, 0, 50, 0.5, 0.5).gate(0.10) is not None  # a constant judge ties every pair
    assert _order(70, 30, 0, 0.49, 0.80).gate(0.10) is not None  # 0.70, but its interval reaches 0.5
    assert _order(10, 90, 0, 0.05, 0.15).gate(0.0) is not None  # backwards, even with no margin
    # the default margin 0: seed 1's warm start (the eighth round) passes; a constant judge does not, nor
    # a share whose interval reaches 0.5
    seed1 = _order(160, 71, 470, 0.513, 0.614)
    assert seed1.gate(0.0) is None and "asks 0.10 above" in seed1.gate(0.10)
    assert _order(0, 0, 50, 0.5, 0.5).gate(0.0).endswith("where the gate asks the interval above 0.5")
    assert _order(55, 45, 0, 0.49, 0.61).gate(0.0) is not None
    nothing = _order(0, 0, 0, math.nan, math.nan)
    assert "tells none of the 512 answers to one prompt apart" in nothing.gate(0.10)


def test_a_policy_order_round_trips_through_json():
    order = _order(5, 2, 1, 0.4, 0.9)
    order.split, order.failed = 0, 3
    assert PolicyOrder.from_dict(json.loads(json.dumps(order.to_dict()))) == order


@pytest.fixture
def gated(tmp_path, tiny_checkpoint, monkeypatch):
    """A run whose curriculum starts from a checkpoint (`train.init_from`) and whose judge is the
    user's, at a scripted endpoint that grades everything 3."""
    monkeypatch.delenv("M1_GENRM_SERVED_CHECKPOINT", raising=False)
    config = PipelineConfig(
        name="gated",
        home=str(tmp_path / "home"),
        train={"init_from": str(tiny_checkpoint), "group_size": 2},
        genrm={"policy_gate_prompts": 3},
        eval={"max_new_tokens": 6},
    )
    with scripted_judge(lambda m: "Grade: 3") as (url, script):
        monkeypatch.setenv("M1_GENRM_URL", url)
        monkeypatch.setenv("M1_GENRM_MODEL", "scripted")
        yield config, script


def test_the_gate_is_measured_once_and_switches_the_general_stage_off(gated, monkeypatch):
    config, script = gated
    configured = load_curriculum(config.train.curriculum)
    assert unmeasured(config, configured) == "genrm-grade"
    assert "general" in active_curriculum(config)[0].names  # not measured yet: nothing refuses it

    order = measure(config, "genrm-grade", measure_inputs(config, "genrm-grade"))
    assert order.prompts == 3 and order.answers == 6 and len(script.messages) == 6  # a user's judge: one view
    assert sum(order.rule_grades.values()) == 6
    assert order.order.right == order.order.wrong == 0  # a constant judge ties every pair the rule splits
    record = json.loads((genrm_root(config) / RECORD).read_text())
    assert record["inputs"]["judge"] == {"url": record["inputs"]["judge"]["url"], "model": "scripted"}

    assert not unmeasured(config, configured)  # kept: a rerun decides without measuring again
    curriculum, notes = active_curriculum(config)
    assert "general" not in curriculum.names and "general" in curriculum.switched_off
    assert all("general" not in s.mixture for s in curriculum.stages)
    assert notes[0].startswith(
        "general tasks: not trained on, the run's judge fails its gate (on the answers"
    )
    assert "the gate asks the interval above 0.5" in notes[0] or "tells none of the 6 answers" in notes[0]
    assert general_gate(config) == policy_gate(config, configured)
    assert passed(config, configured) is None  # refused: nothing to show as passed

    # another judge, another starting checkpoint or other settings: measured again
    monkeypatch.setenv("M1_GENRM_MODEL", "another")
    assert unmeasured(config, configured) and policy_gate(config, configured) is None
    monkeypatch.setenv("M1_GENRM_MODEL", "scripted")
    more = config.model_copy(update={"genrm": config.genrm.model_copy(update={"policy_gate_prompts": 4})})
    assert unmeasured(more, configured)
    assert len(script.messages) == 6


def test_a_passing_measure_keeps_the_general_stage(gated):
    config, _ = gated
    configured = load_curriculum(config.train.curriculum)
    inputs = measure_inputs(config, "genrm-grade")
    passing = _order(80, 10, 10, 0.8, 0.9)
    (genrm_root(config) / RECORD).parent.mkdir(parents=True)
    (genrm_root(config) / RECORD).write_text(
        json.dumps({"fingerprint": fingerprint(inputs), "inputs": inputs, "order": passing.to_dict()})
    )
    assert not unmeasured(config, configured) and policy_gate(config, configured) is None
    assert "general" in active_curriculum(config)[0].names
    # the run report says what it passed on (the refusal's sentence, `policy_gate`, says why not)
    shown = passed(config, configured)
    assert shown.startswith(
        f"on the answers of the checkpoint it starts from ({Path(config.train.init_from).name})"
    )
    assert "it orders 0.850 of the pairs" in shown and "80 as the rule, 10 the other way, 10 tied" in shown


@pytest.mark.parametrize("off", [{"gate": False}, {"policy_gate_prompts": 0}, {"enabled": False}])
def test_nothing_is_measured_with_the_gate_off(gated, off):
    config, _ = gated
    config = config.model_copy(update={"genrm": config.genrm.model_copy(update=off)})
    assert not unmeasured(config, load_curriculum(config.train.curriculum))


def test_nothing_is_measured_for_a_curriculum_that_scores_general_by_a_rule(gated, tmp_path):
    from tests.genrm.test_judge_gate import _curriculum

    config, _ = gated
    ruled = load_curriculum(_curriculum(tmp_path, "general-rule"))
    assert not unmeasured(config, ruled)


@pytest.mark.slow
def test_the_training_flows_measure_it_before_they_plan(
    tmp_path, tiny_checkpoint, prefect_harness, monkeypatch
):
    """After a judge passes the first gate (`general_tasks`), the training flows measure the second on
    the checkpoint the curriculum starts from, once, and plan without the general stage it refuses."""
    from prefect import flow

    from flows.genrm.flow import general_tasks, heldout_rows
    from flows.store import DatasetStore
    from flows.train import training_curriculum
    from tests.genrm.test_user_judge import SMALL, oracle
    from tests.rl.test_train_flow import items

    config = PipelineConfig(
        name="theirs",
        home=str(tmp_path / "home"),
        genrm={**SMALL, "policy_gate_prompts": 3},
        train={"init_from": str(tiny_checkpoint), "group_size": 2},
        eval={"max_new_tokens": 6},
        logic={"enabled": False},
        code={"enabled": False},
        swe={"enabled": False},
    )
    DatasetStore(config.home).write("theirs-curated", items(6))  # the user's data (never made up by training)
    knows = oracle(heldout_rows(config.genrm))

    def judge(message: str) -> str:  # the held-out labels' true grades; a 3 for anything else
        try:
            return knows(message)
        except KeyError:
            return "Grade: 3"

    @flow
    def plan_it():
        return training_curriculum(config)

    monkeypatch.delenv("M1_GENRM_SERVED_CHECKPOINT", raising=False)
    monkeypatch.setenv("M1_GENRM_MODEL", "theirs")
    with scripted_judge(judge) as (url, script):
        monkeypatch.setenv("M1_GENRM_URL", url)
        assert general_tasks(config)["verdicts"]["genrm-grade"] is None  # the first gate passes
        asked = len(script.messages)
        curriculum, notes = plan_it()
        assert len(script.messages) == asked + 6  # 3 prompts x 2 answers, one view each
        assert "general" not in curriculum.names and "general" in curriculum.switched_off
        assert "fails its gate (on the answers of the checkpoint it starts from (tiny-m1)" in notes[0]
        again, _ = plan_it()
        assert len(script.messages) == asked + 6 and again.names == curriculum.names  # kept, not remeasured
    assert (genrm_root(config) / RECORD).is_file()


def test_a_start_that_is_no_checkpoint_is_left_to_its_stage(gated, tmp_path):
    config, _ = gated
    config = config.model_copy(
        update={"train": config.train.model_copy(update={"init_from": str(tmp_path / "nowhere")})}
    )
    configured = load_curriculum(config.train.curriculum)
    assert unmeasured(config, configured) == "genrm-grade" and measure_inputs(config, "genrm-grade") is None
