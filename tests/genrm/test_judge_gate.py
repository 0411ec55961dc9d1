"""A judge that loses to a constant baseline is not trained on: the gate's arithmetic, and the curriculum a
run with such a judge trains (the general stage off, the reason in the notes)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from flows.config import PipelineConfig
from flows.curriculum.plan import active_curriculum
from flows.genrm.flow import judge_dir, judge_gate
from verifiers.genrm.evaluate import JudgeEval


def judge_eval(
    accuracy: float, majority: float, pairwise: float | None, reference: float = 0.83
) -> JudgeEval:
    pair = None
    if pairwise is not None:
        pair = {
            "n": 100,
            "accuracy": pairwise,
            "majority_baseline": max(reference, 1 - reference),
            "reference_baseline": reference,
            "position_consistency": 0.9,
            "failed": 0,
        }
    return JudgeEval(
        n=100,
        accuracy=accuracy,
        majority_baseline=majority,
        spearman=0.3,
        failed=0,
        confusion={},
        best_of_n=[],
        pairwise=pair,
    )


def test_the_gate_needs_both_baselines_beaten():
    assert judge_eval(0.6, 0.4, 0.9).gate() is None
    assert judge_eval(0.6, 0.4, 0.52).gate() == "pairwise accuracy 0.52 <= always the reference 0.83"
    assert judge_eval(0.4, 0.4, 0.9).gate() == "grade accuracy 0.40 <= majority grade 0.40"
    both = judge_eval(0.3, 0.4, 0.5).gate()
    assert both.startswith("grade accuracy 0.30") and "always the reference 0.83" in both
    assert judge_eval(0.6, 0.4, None).gate() is None  # no pairwise judgments: only the grades count


def test_the_table_shows_always_the_reference_as_the_pairwise_baseline():
    rows = {r["metric"]: r for r in judge_eval(0.6, 0.4, 0.52, reference=0.83).table()}
    assert rows["pairwise accuracy"]["value"] == 0.52 and rows["pairwise accuracy"]["baseline"] == 0.83
    assert "always the reference" in rows["pairwise accuracy"]["note"]


def _write_judge(config: PipelineConfig, result: JudgeEval) -> None:
    folder = judge_dir(config)
    folder.mkdir(parents=True)
    (folder / "training.json").write_text(json.dumps({"judge": {"eval": asdict(result)}}))


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    return PipelineConfig(name="gate", home=str(tmp_path / "home"))


def test_a_run_with_a_losing_judge_does_not_train_on_general_tasks(config):
    assert judge_gate(config) is None  # no judge yet (preflight): the plan keeps the general stage
    planned, _ = active_curriculum(config)
    assert "general" in [s.name for s in planned.stages]

    _write_judge(config, judge_eval(0.6, 0.4, 0.52))
    assert judge_gate(config) == "pairwise accuracy 0.52 <= always the reference 0.83"
    curriculum, notes = active_curriculum(config)
    assert "general" not in [s.name for s in curriculum.stages]
    assert all("general" not in s.mixture for s in curriculum.stages)
    assert notes[0] == (
        "general tasks: not trained on, the run's judge loses to a constant baseline "
        "(pairwise accuracy 0.52 <= always the reference 0.83)"
    )


def test_a_good_judge_or_a_served_one_is_trained_on(config, monkeypatch):
    _write_judge(config, judge_eval(0.6, 0.4, 0.9))
    assert "general" in [s.name for s in active_curriculum(config)[0].stages]
    judge_dir(config).joinpath("training.json").write_text(
        json.dumps({"judge": {"eval": asdict(judge_eval(0.3, 0.4, 0.5))}})
    )
    monkeypatch.setenv("M1_GENRM_URL", "http://127.0.0.1:1/v1")  # the user's own judge: not ours to gate
    assert judge_gate(config) is None


def test_the_runs_own_judge_is_gated_while_it_is_served(config, monkeypatch):
    """`m1 run` serves its judge for the evaluations and stages (M1_GENRM_URL set by served_judge): that
    URL is still the run's own judge, so the gate holds there as in the plan made before serving it (a
    stage that saw no gate trained on the losing judge and rebuilt the base for a different dataset list)."""
    from flows.genrm.files import SERVED_JUDGE_ENV

    _write_judge(config, judge_eval(0.6, 0.4, 0.52))
    monkeypatch.setenv("M1_GENRM_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv(SERVED_JUDGE_ENV, str(judge_dir(config).resolve()))
    assert judge_gate(config) == "pairwise accuracy 0.52 <= always the reference 0.83"
    monkeypatch.setenv(SERVED_JUDGE_ENV, "/somewhere/else")  # another run's judge: the user's choice
    assert judge_gate(config) is None


def test_the_gate_can_be_switched_off(config):
    _write_judge(config, judge_eval(0.6, 0.4, 0.52))
    off = config.model_copy(update={"genrm": config.genrm.model_copy(update={"gate": False})})
    assert judge_gate(off) is None
    assert "general" in [s.name for s in active_curriculum(off)[0].stages]
