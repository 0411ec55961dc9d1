"""Curriculum units the mutation sample found unchecked: the notes of a pruned curriculum, a stage whose
mixture is left all zero, open-ended difficulty bands, and the dataset versions in a stage's fingerprint."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.config import PipelineConfig
from flows.curriculum import load_curriculum
from flows.curriculum.fingerprint import stage_inputs
from flows.curriculum.mixture import difficulty_band
from flows.lineage import changes, fingerprint


def test_a_switched_off_domain_is_named_in_each_stage_that_loses_it():
    tiny = load_curriculum("tiny")
    pruned, notes = tiny.active(lambda kind: kind not in ("general", "code"))
    assert notes == [
        "dataset {run}-code: its flow is switched off",
        "dataset {run}-general: its flow is switched off",
        "stage reasoning: mixture without code",
        "stage general: switched off (needs general)",
        "stage length-window: mixture without code",
    ]
    assert [s.mixture for s in pruned.stages] == [{"math": 0.6, "logic": 0.25}] * 2


def test_a_stage_left_with_only_zero_weights_is_switched_off():
    tiny = load_curriculum("tiny")
    first = tiny.stages[0].model_copy(update={"mixture": {"math": 0.0, "code": 1.0}})
    pruned, notes = tiny.model_copy(update={"stages": [first, *tiny.stages[1:]]}).active(
        lambda kind: kind != "code"
    )
    assert "stage reasoning: mixture without code" in notes
    assert "stage reasoning: switched off (nothing left in its mixture)" in notes
    assert "reasoning" in pruned.switched_off and "reasoning" not in pruned.names


def _frame(*levels):
    meta = [json.dumps({} if d is None else {"difficulty": d}) for d in levels]
    return pl.DataFrame({"id": [str(i) for i in range(len(levels))], "metadata": meta})


@pytest.mark.parametrize(
    ("lo", "hi", "band", "kept"),
    [
        (2, None, "[2, inf]", 3),
        (None, 2.5, "[-inf, 2.5]", 3),
        (1.5, 3, "[1.5, 3]", 2),
    ],  # the item without a difficulty is kept in every band
)
def test_an_open_end_of_the_difficulty_band_is_infinite(lo, hi, band, kept):
    stage = load_curriculum("tiny").stages[0].model_copy(update={"min_difficulty": lo, "max_difficulty": hi})
    out, notes = difficulty_band(_frame(1, 2, 4, None), stage)
    assert out.height == kept
    assert notes[0] == f"stage reasoning: difficulty band {band} keeps {kept} of 4 items"


def test_the_datasets_read_and_the_start_are_part_of_a_stages_fingerprint():
    config = PipelineConfig()

    def fp(refs, start):
        return fingerprint(stage_inputs(config, {"name": "s"}, config.train, {}, refs, start))

    one = fp(["t-curated@v1"], "start")
    assert one == fp(["t-curated@v1"], "start")
    assert one != fp(["t-curated@v2"], "start")
    assert one != fp(["t-curated@v1"], "other start")
    old = stage_inputs(config, {"name": "s"}, config.train, {}, ["t-curated@v1"], "start")
    new = stage_inputs(config, {"name": "s"}, config.train, {}, ["t-curated@v2"], "other start")
    assert changes(old, new) == ["t-curated v1 -> v2", "start checkpoint replaced"]


@pytest.mark.parametrize(
    "field, value",
    [("k", 3), ("grade_score", "expected"), ("constraint_weight", 0.9), ("judge_max_tokens", 64)],
)
def test_how_a_judge_is_asked_is_an_input_only_where_a_judge_scores(tmp_path, field, value):
    from flows.evaluate import evaluation_inputs

    config = PipelineConfig(home=str(tmp_path))
    other = config.model_copy(update={"genrm": config.genrm.model_copy(update={field: value})})
    refs = ["t-curated@v1", "t-general@v1"]

    def stage(cfg, verifiers, mixture):
        return fingerprint(
            stage_inputs(cfg, {"name": "s", "mixture": mixture}, cfg.train, verifiers, refs, "x")
        )

    ruled = ({"math": "math", "general": "genrm-grade"}, {"math": 1.0})
    mixed = ({"math": "math", "general": "genrm-grade"}, {"math": 0.5, "general": 0.5})
    assert stage(config, *ruled) == stage(other, *ruled)  # no judge scores it: nothing to retrain
    assert stage(config, *mixed) != stage(other, *mixed)

    curriculum = load_curriculum("tiny")  # held out: general by its rule grade, not the judge

    def evaluation(cfg, domains):
        return fingerprint(evaluation_inputs(cfg, str(tmp_path), curriculum, refs, domains))

    assert evaluation(config, {"math", "general"}) == evaluation(other, {"math", "general"})
    judged_eval = curriculum.model_copy(update={"eval_verifiers": {"general": "genrm-grade"}})
    assert fingerprint(
        evaluation_inputs(config, str(tmp_path), judged_eval, refs, {"general"})
    ) != fingerprint(evaluation_inputs(other, str(tmp_path), judged_eval, refs, {"general"}))
