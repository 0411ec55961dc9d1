"""Judge evaluation's pairwise scoring (`evaluate_judge(..., pairwise=True)`), against scripted loopback
judges: the sign of a verdict and of the labels, how ties, failed judgments and the two presentation
orders count, and the always-the-reference baseline."""

from __future__ import annotations

import pytest

from tests.genrm.scripted import blocks, scripted_judge
from verifiers.genrm.evaluate import evaluate_judge

# One prompt: the reference (grade 4) and four responses, one better, one as good, two worse.
QUALITY = {"alpha": 4, "bravo": 5, "charlie": 4, "delta": 2, "echo": 1}


def row(word: str, *, reference: bool = False) -> dict:
    return {
        "prompt_id": "p1",
        "domain": "math",
        "question": "What is six times seven?",
        "reference": "42",
        "response": f"{word}: the answer is 42",
        "grade": QUALITY[word],
        **({"perturbation": "reference"} if reference else {}),
    }


ROWS = [row("alpha", reference=True), row("bravo"), row("charlie"), row("delta"), row("echo")]
# The labels' sign of each response against the reference: bravo +1, charlie 0, delta -1, echo -1.


def quality(text: str) -> int:
    (word,) = [w for w in QUALITY if w in text]
    return QUALITY[word]


def judge(verdict):
    """A judge whose grades are right and whose pairwise reply is ``verdict(grade of A, grade of B)``."""

    def reply(message: str) -> str:
        b = blocks(message)
        if "response_a" not in b:
            return f"Grade: {quality(b['response'])}"
        return verdict(quality(b["response_a"]), quality(b["response_b"]))

    return reply


def pairwise(verdict) -> dict[str, float]:
    with scripted_judge(judge(verdict)) as (url, _):
        result = evaluate_judge(url, ROWS, ns=(1,), draws=1)
    assert result.pairwise is not None
    return result.pairwise


def fair(a: int, b: int) -> str:
    return "Verdict: [[A]]" if a > b else "Verdict: [[B]]" if b > a else "Verdict: [[C]]"


def test_a_fair_judge_scores_every_pair_right_ties_included():
    p = pairwise(fair)
    assert p == {
        "n": 4,  # each response against its prompt's reference; the reference is not compared with itself
        "accuracy": 1.0,  # the tie (charlie) counts as right only with a tie verdict
        "majority_baseline": 0.5,  # two of four pairs: the reference is better
        "reference_baseline": 0.5,  # always "the reference is better": right on delta and echo
        "position_consistency": 1.0,
        "failed": 0,
    }


def test_a_reversed_judge_is_right_only_on_the_tie():
    p = pairwise(lambda a, b: fair(b, a))
    assert p["accuracy"] == 0.25 and p["position_consistency"] == 1.0


@pytest.mark.parametrize("position", ["A", "B"])
def test_a_judge_that_always_prefers_one_position_is_a_tie_and_inconsistent(position):
    """The two orders disagree, so every pair is scored a tie: right on the tied pair only."""
    p = pairwise(lambda a, b: f"Verdict: [[{position}]]")
    assert p["accuracy"] == 0.25 and p["position_consistency"] == 0.0 and p["failed"] == 0


def test_a_judge_that_always_prefers_the_reference_scores_the_reference_baseline():
    p = pairwise(lambda a, b: "Verdict: [[A]]" if a == 4 and b != 4 else "Verdict: [[B]]" if b == 4 and a != 4 else "Verdict: [[C]]")  # fmt: skip
    # Shown as A or as B, the reference (grade 4) wins; charlie (also 4) ties with it.
    assert p["accuracy"] == 0.75  # right on charlie's tie, delta and echo; wrong on bravo
    assert p["reference_baseline"] == 0.5


def test_a_failed_judgment_counts_as_wrong_and_as_failed():
    """Unparseable replies in both orders for echo: no verdict, a miss in the accuracy's denominator."""
    p = pairwise(lambda a, b: "no idea" if 1 in (a, b) else fair(a, b))
    assert p["failed"] == 1 and p["n"] == 4 and p["accuracy"] == 0.75
    assert p["position_consistency"] == 1.0  # over the pairs both orders judged


def test_a_pair_judged_in_one_order_only_takes_that_order_and_no_consistency():
    p = pairwise(lambda a, b: "no idea" if (a, b) == (1, 4) else fair(a, b))  # echo shown first fails
    assert p["failed"] == 0 and p["accuracy"] == 1.0
    assert p["position_consistency"] == pytest.approx(1.0)  # echo left out of the consistency


def test_rows_without_a_reference_are_not_compared():
    with scripted_judge(judge(fair)) as (url, _):
        result = evaluate_judge(url, ROWS[1:], ns=(1,), draws=1)
    assert result.pairwise is None
