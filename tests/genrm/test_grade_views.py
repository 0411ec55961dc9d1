"""Grading against the reference and the question (`grade_views = "both"`, verifiers/genrm/grade.py):
each response is graded twice, once against the reference and once against the question alone, and the
lower grade counts; through `genrm-grade`, the judge evaluation, `m1 genrm eval --grade-views`, the
option's checks and the CLI's flag (both in test_pointwise_pairs.py, beside the pair method's), and the run's judge (which is trained on both prompts and asked both ways)."""

from __future__ import annotations

import pytest

from flows.genrm.labels import labelled_set
from tests.genrm.scripted import blocks, scripted_judge
from verifiers.genrm.evaluate import evaluate_judge
from verifiers.genrm.grade import GradeJudge
from verifiers.genrm.prompts import grade_prompt, point_prompt
from verifiers.math import reference_answer

Q = "Ada has 3 apples and gets 4 more. How many?"
ITEM = {"prompt": Q, "reference": "Ada has 3 + 4 = 7. The answer is 7."}


def fooled_by_the_reference(message: str) -> str:
    """Against the reference it calls everything right (a third of wrong facts get a 5, as the small judge
    does); against the question alone it reads the fact."""
    b = blocks(message)
    if "reference" in b:
        return "Grade: 5"
    return "Grade: 5" if "7" in b["response"] else "Grade: 2"


def test_both_views_grade_each_response_twice_and_the_lower_grade_counts():
    items = [ITEM | {"response": "It is 7."}, ITEM | {"response": "It is 8."}]
    with scripted_judge(fooled_by_the_reference) as (url, script):
        right, wrong = GradeJudge(url=url, grade_views="both").verify(items)
    answer = reference_answer(ITEM["reference"])  # what the five-grade prompt shows of the reference
    assert sorted(script.messages) == sorted(
        [grade_prompt(Q, answer, r)[0] for r in ("It is 7.", "It is 8.")]
        + [point_prompt(Q, r)[0] for r in ("It is 7.", "It is 8.")]
    )
    assert right.reward == 1.0 and right.details["grades"] == [5] and right.details["question_grades"] == [5]
    assert wrong.details["grade"] == 2 and wrong.reward == 0.25
    assert wrong.details["grades"] == [5] and wrong.details["question_grades"] == [2]


def test_the_reference_view_alone_is_the_default_and_asks_once():
    with scripted_judge(fooled_by_the_reference) as (url, script):
        (r,) = GradeJudge(url=url).verify([ITEM | {"response": "It is 8."}])
    assert len(script.messages) == 1 and "<reference>" in script.messages[0]
    assert r.reward == 1.0 and "question_grades" not in r.details


def test_a_view_the_judge_cannot_grade_is_an_error_not_a_grade():
    def no_grade_without_reference(message: str) -> str:
        return "Grade: 4" if "reference" in blocks(message) else "I cannot say"

    with scripted_judge(no_grade_without_reference) as (url, _):
        (r,) = GradeJudge(url=url, grade_views="both", attempts=2).verify([ITEM | {"response": "7"}])
    assert r.reward == 0 and "no grade 1-5 in its reply after 2 attempt(s)" in r.details["error"]
    assert r.details["grades"] == [4] and r.details["reply"] == "I cannot say"


def test_k_samples_are_averaged_per_view_before_the_lower_is_taken():
    calls = {"point": 0}

    def unsure_alone(message: str) -> str:  # against the question: 5 then 3; against the reference: 4
        if "reference" in blocks(message):
            return "Grade: 4"
        calls["point"] += 1
        return "Grade: 5" if calls["point"] % 2 else "Grade: 3"

    with scripted_judge(unsure_alone) as (url, _):
        (r,) = GradeJudge(url=url, grade_views="both", k=2).verify([ITEM | {"response": "7"}])
    assert r.details["grade"] == 4.0  # min(mean(4, 4), mean(5, 3))


def test_the_evaluation_grades_both_ways_and_says_so():
    rows = [x.as_row() for x in labelled_set(0, 0, 8, seed=5)]
    truth = {(r["question"], r["response"]): r["grade"] for r in rows}

    def reads_the_question(message: str) -> str:  # a 5 beside the reference, the true grade without it
        b = blocks(message)
        return "Grade: 5" if "reference" in b else f"Grade: {truth[b['question'], b['response']]}"

    with scripted_judge(reads_the_question) as (url, _):
        one = evaluate_judge(url, rows, ns=(8,), draws=5, pairwise=False, grade_views="reference")
        two = evaluate_judge(url, rows, ns=(8,), draws=5, pairwise=False, grade_views="both")
    assert (one.grade_views, two.grade_views) == ("reference", "both")
    assert set(one.confusion[2]) == {"5"}  # against the reference alone, every wrong answer is a 5
    note = next(r["note"] for r in two.table() if r["metric"] == "grade accuracy")
    assert "lower of two" in note
    assert two.accuracy == 1.0 and two.best_of(8)["judge"] == 1.0
    assert one.best_of(8)["judge"] == pytest.approx(one.best_of(8)["random"], abs=0.15)


def test_the_evaluation_reads_written_grades_whatever_the_rewards_use(monkeypatch):
    """`M1_GENRM_GRADE_SCORE=expected` weighs the rewards a stage gets; the held-out measures compare whole
    grades with the labels, so the evaluation asks for written ones (and no logprobs)."""
    monkeypatch.setenv("M1_GENRM_GRADE_SCORE", "expected")
    rows = [x.as_row() for x in labelled_set(0, 0, 8, seed=5)]
    truth = {(r["question"], r["response"]): r["grade"] for r in rows}
    with scripted_judge(lambda m: f"Grade: {truth[blocks(m)['question'], blocks(m)['response']]}") as (
        url,
        _,
    ):
        result = evaluate_judge(url, rows, ns=(8,), draws=5, pairwise=False)
    assert result.accuracy == 1.0 and result.failed == 0
