"""Math rewards that cannot be gamed: hedging, unmarked answers, Unicode forms, the [0, 1] bound and
required reasoning tags."""

from __future__ import annotations

import pytest

from verifiers.math import MathVerifier


def score(response: str, reference: str = "42", **options) -> tuple[float, dict]:
    (reward,) = MathVerifier(**options).verify([{"reference": reference, "response": response}])
    return reward.reward, reward.details


@pytest.mark.parametrize(
    "response",
    [
        r"Maybe \boxed{41} or \boxed{42}",
        r"<think>hmm</think>\boxed{42}, or if not, \boxed{41}",
        r"\boxed{41 \lor 42}",  # math-verify alone would keep the last side, 42
        r"\boxed{42 \vee 41}",
        "The answer is 41. No wait, the answer is 42.",
    ],
)
def test_several_different_answers_score_zero(response):
    reward, details = score(response)
    assert reward == 0 and details["correct"] is False
    assert sorted(details["answers"]) == ["41", "42"]
    assert "not all equal to the reference" in details["rejected"]


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        (r"\boxed{42} and once more: \boxed{42}", "42"),
        (r"\boxed{42}, that is \boxed{42.0}", "42"),
        (r"\boxed{\frac{1}{2}} = \boxed{0.5}", r"\frac{1}{2}"),
        (r"\boxed{42 \lor 42}", "42"),
    ],
)
def test_the_same_answer_repeated_counts_once(response, reference):
    reward, details = score(response, reference)
    assert reward == 1.0 and details["correct"] is True and "rejected" not in details


def test_many_distinct_answers_are_rejected_without_comparing_them():
    response = "".join(rf"\boxed{{{i}}}" for i in range(40, 50))
    reward, details = score(response)
    assert reward == 0 and "10 different final answers" in details["rejected"]


def test_an_unmarked_last_line_is_not_an_answer_unless_asked():
    reward, details = score("She started with 40 apples and got 2 more.\nSo she has 42 apples")
    assert reward == 0 and details["answer"] is None
    reward, details = score("Work.\n\n42", last_line_fallback=True)
    assert reward == 0.9 and details["extracted_by"] == "last_line"  # correct, but not in the format


@pytest.mark.parametrize(
    ("response", "reference", "correct"),
    [
        (r"\boxed{４２}", "42", True),  # full-width digits
        (r"\boxed{42}", "４２", True),  # the reference is normalised too
        ("\\boxed{\u22123}", "-3", True),  # minus sign
        (r"\boxed{½}", "0.5", True),
        (r"\boxed{x²+1}", "x^2+1", True),
        (r"\boxed{x²}", "2x", False),  # NFKC alone would make it x2, which math-verify reads as 2x
        ("\\boxed{4\u200b2}", "42", True),  # zero-width space
        ("\\boxed{\u0417}", "3", False),  # Cyrillic Ze looks like 3 but is not a digit
    ],
)
def test_unicode_forms_are_normalised(response, reference, correct):
    reward, details = score(response, reference)
    assert details["correct"] is correct and reward == float(correct)


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.5, 1.0])
def test_rewards_stay_in_zero_one(weight):
    responses = [
        "<think>w</think>\\boxed{42}",
        "\\boxed{42}",
        "the answer is 42",
        "\\boxed{41}",
        "<think>w</think>\\boxed{42}\\boxed{42}",
        "<think>a</think><think>b</think>\\boxed{42}",
        "",
    ]
    rewards = MathVerifier(format_weight=weight).verify(
        [{"reference": "42", "response": r} for r in responses]
    )
    values = [r.reward for r in rewards]
    assert all(0 <= v <= 1 for v in values)
    assert values[:4] == [1.0, 1.0, 1 - weight, 0.0]
    assert values[5] == 1 - weight  # unbalanced tags: correct but not formatted


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_format_weight_outside_zero_one_is_refused(weight):
    with pytest.raises(ValueError, match="format_weight"):
        MathVerifier(format_weight=weight)


@pytest.mark.parametrize(
    ("response", "reward"),
    [
        (r"<think>2 + 40</think> \boxed{42}", 1.0),
        (r"\boxed{42}", 0.0),  # no think block
        (r"<think>2 + 40 ... \boxed{42}", 0.0),  # unclosed: the box is inside the reasoning
        (r"<think>a</think><think>b</think> \boxed{42}", 0.0),  # two blocks
    ],
)
def test_require_think_costs_reward_even_without_a_format_weight(response, reward):
    got, details = score(response, require_think=True, format_weight=0)
    assert got == reward
    if reward == 0:
        assert "require_think" in details["rejected"] and details["correct"] is False


def test_without_require_think_an_unclosed_block_only_costs_the_format_share():
    reward, details = score(r"<think>2 + 40 ... \boxed{42}")
    assert reward == 0.9 and details["format_ok"] is False


def test_an_overlong_answer_is_wrong_without_parsing():
    reward, details = score("\\boxed{" + "1+" * 2000 + "40}")
    assert reward == 0 and "max_answer_chars" in details["rejected"]
    assert len(details["answer"]) < 300  # details keep an excerpt, not the megabyte
