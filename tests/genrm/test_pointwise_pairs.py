"""The pointwise way to judge a pair (`pair_method = "pointwise"`, verifiers/genrm/pair.py): each text is
graded alone against the question (no reference, no second text) and the grades are compared; through
`genrm-pair`, the judge evaluation and the gate, `m1 genrm eval --pair-method`, the option's checks, and the
judge's training examples for it."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from itertools import count

import pytest

from flows.config import GenRMConfig
from flows.genrm.labels import Labelled, labelled_set, write_labels
from flows.genrm.train_judge import judge_examples, point_examples
from tests.genrm.scripted import blocks, scripted_judge
from tests.genrm.test_pairwise_eval import quality, rows
from verifiers.genrm.evaluate import evaluate_judge
from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.pair import PairJudge, compare
from verifiers.genrm.prompts import point_prompt

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]
Q = "Ada has 3 apples and gets 4 more. How many?"
ITEM = {"prompt": Q, "reference": "Ada has 3 + 4 = 7. The answer is 7."}


def sevens(message: str) -> str:
    """Grades a text by whether it says 7: a judge that reads the fact."""
    return "Grade: 5" if "7" in blocks(message)["response"] else "Grade: 2"


def test_each_text_is_graded_alone_once_and_the_grades_are_compared():
    items = [ITEM | {"response": "It is 7."}, ITEM | {"response": "It is eight."}]
    with scripted_judge(sevens) as (url, script):
        tie, loss = PairJudge(url=url, pair_method="pointwise", constraint_weight=0).verify(items)
    # the reference once (both items share it), each response once: three one-text prompts
    assert len(script.messages) == 3
    for m in script.messages:
        b = blocks(m)
        assert set(b) == {"question", "response"} and b["question"] == Q
        assert m == point_prompt(Q, b["response"])[0]
    assert tie.reward == 0 and tie.details["position_consistent"] is True
    assert loss.reward == -1 and loss.details["forward"] == loss.details["backward"] == -1


def test_k_samples_are_compared_sample_by_sample():
    replies = count()

    def unsure(message: str) -> str:  # the first text's samples: 5 then 2; the second's: always 2
        if "7" in blocks(message)["response"]:
            return f"Grade: {5 if next(replies) % 2 == 0 else 2}"
        return "Grade: 2"

    with scripted_judge(unsure) as (url, _):
        opts = JudgeOptions.resolve(url=url, k=2, pair_method="pointwise")
        (c,) = compare(opts, [(Q, "It is 7.", "It is eight.")])
    assert c.score == 0.5 and c.consistent is True


def test_a_text_the_judge_cannot_grade_fails_the_comparison_with_an_error():
    def stuck(message: str) -> str:
        return "hmm" if "eight" in blocks(message)["response"] else "Grade: 4"

    with scripted_judge(stuck) as (url, _):
        (r,) = PairJudge(url=url, pair_method="pointwise").verify([ITEM | {"response": "It is eight."}])
    assert r.reward == 0 and "no grade of both texts" in r.details["error"]


def test_a_cut_text_is_reported_under_the_pairwise_judges_names():
    with scripted_judge(sevens) as (url, _):
        opts = JudgeOptions.resolve(url=url, pair_method="pointwise", max_response_chars=200)
        (c,) = compare(opts, [(Q, "It is 7." + " and so on" * 40, "It is eight.")])
    assert set(c.truncated) == {"response_a_chars_cut"} and c.truncated["response_a_chars_cut"] > 0
    assert c.score == 1.0  # the head and tail it keeps still hold the fact


def test_the_order_of_the_two_texts_cannot_change_the_verdict():
    def first_text_bias(message: str) -> str:  # whatever it reads, a pair prompt would favour A
        return "Verdict: [[A]]" if "response_a" in message else sevens(message)

    with scripted_judge(first_text_bias) as (url, _):
        opts = JudgeOptions.resolve(url=url, pair_method="pointwise")
        forward, backward = compare(opts, [(Q, "7", "eight"), (Q, "eight", "7")])
    assert (forward.score, backward.score) == (1.0, -1.0)


def test_the_evaluation_measures_the_pointwise_judge_and_says_its_consistency_is_by_construction():
    def grades(message: str) -> str:
        return f"Grade: {quality(blocks(message)['response'])}"

    def by_length(message: str) -> str:  # reads nothing but the length
        return f"Grade: {min(5, 1 + len(blocks(message)['response']) // 6)}"

    with scripted_judge(grades) as (url, script):
        good = evaluate_judge(url, rows(), ns=(1,), draws=1, pair_method="pointwise")
    assert not any("response_a" in m for m in script.messages)
    p = good.pairwise
    assert p["method"] == "pointwise" and p["balanced_accuracy"] == 1.0 and p["position_consistency"] == 1.0
    assert p["first_shown_wins"] == 0.5
    note = next(r["note"] for r in good.table() if r["metric"] == "position consistency")
    assert "by construction" in note
    assert good.gate(judge="pair") is None
    with scripted_judge(by_length) as (url, _):
        biased = evaluate_judge(url, rows(), ns=(1,), draws=1, pair_method="pointwise")
    assert biased.pairwise["balanced_accuracy"] < 0.5 and biased.gate(judge="pair") is not None


@pytest.mark.parametrize("reply", ["constant", "random"])
def test_a_pointwise_judge_that_reads_nothing_is_refused(reply):
    rng = random.Random(0)

    def grade(message: str) -> str:
        return "Grade: 4" if reply == "constant" else f"Grade: {rng.randint(1, 5)}"

    with scripted_judge(grade) as (url, _):
        result = evaluate_judge(url, rows(prompts=12), ns=(1,), draws=1, pair_method="pointwise")
    p = result.pairwise
    assert p["balanced_accuracy"] < p["best_trivial_accuracy"] + 0.10
    assert result.gate(judge="pair") is not None
    if reply == "constant":  # every pair a tie: exactly the trivial judges' 1/3
        assert p["recall"] == {"response wins": 0.0, "tie": 1.0, "reference wins": 0.0}


@pytest.mark.parametrize(
    ("option", "default", "chosen", "refusal", "after_reference_training"),
    [
        ("pair_method", "pairwise", "pointwise", "pair_method must be pairwise or pointwise", "pairwise"),
        ("grade_views", "reference", "both", "grade_views must be reference or both", "reference"),
    ],
)
def test_the_judging_options_are_checked_by_name_read_from_the_environment_and_follow_the_training(
    monkeypatch, option, default, chosen, refusal, after_reference_training
):
    with pytest.raises(ValueError, match=refusal):
        JudgeOptions.resolve(url="http://x/v1", **{option: "sideways"})
    assert getattr(JudgeOptions.resolve(url="http://x/v1"), option) == default
    monkeypatch.setenv(f"M1_GENRM_{option.upper()}", chosen)
    assert getattr(JudgeOptions.resolve(url="http://x/v1"), option) == chosen
    # the run's judge is asked the way it trained: the pointwise examples teach the question-only prompt
    assert getattr(GenRMConfig(pair_training="pointwise"), option) == chosen
    assert getattr(GenRMConfig(pair_training="reference"), option) == after_reference_training


@pytest.mark.parametrize(
    ("flag", "good", "refusal"),
    [
        ("--pair-method", "pointwise", "--pair-method must be pairwise or pointwise"),
        ("--grade-views", "both", "--grade-views must be reference or both"),
    ],
)
def test_eval_cli_takes_the_judging_options_and_refuses_unknown_ones(tmp_path, flag, good, refusal):
    path = tmp_path / "labels.jsonl"
    write_labels(path, labelled_set(0, 0, 6, seed=3))
    bad = subprocess.run(
        [
            *M1,
            "genrm",
            "eval",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--labels",
            str(path),
            flag,
            "sideways",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and refusal in bad.stderr
    with scripted_judge(lambda m: "Grade: 4") as (url, script):
        proc = subprocess.run(
            [*M1, "genrm", "eval", "--endpoint", url, "--labels", str(path), flag, good],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    if flag == "--pair-method":  # each text graded alone: no A/B prompt, and the table says why
        assert "by construction" in proc.stdout and not any("response_a" in m for m in script.messages)
    else:  # every response graded twice, once without the reference, and the table says so
        assert "lower of two" in proc.stdout
        without = [m for m in script.messages if "<reference>" not in m and "response_a" not in m]
        assert len(without) == len([m for m in script.messages if "<reference>" in m])


def _lab(pid: str, response: str, grade: int, domain: str = "general") -> Labelled:
    item = {"reference": "Hi Bo, the shop opens at 9 o'clock.", "metadata": json.dumps({"key": "9"})}
    return Labelled(pid, domain, f"question {pid}", "ref", response, grade, "changed", item)


def test_pointwise_training_examples_grade_each_response_without_its_reference():
    labs = [_lab("p1", "opens at 9", 5), _lab("p1", "opens at 8", 2), _lab("m1", "x", 2, "math")]
    out = point_examples(labs, ["general"])
    assert [(e.kind, e.domain, e.answer, e.label) for e in out] == [
        ("point", "general", "Grade: 5", 5),
        ("point", "general", "Grade: 2", 2),
    ]
    assert out[0].message == point_prompt("question p1", "opens at 9")[0] and "ref" not in out[0].message
    kinds = {e.kind for e in judge_examples(labs, GenRMConfig(pair_training="pointwise"), random.Random(0))}
    assert kinds == {"grade", "point"}  # no two-text pair to learn
