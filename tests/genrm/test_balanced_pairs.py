"""The balanced pairwise set (verifiers/genrm/balanced.py): its construction (both decisive classes in
equal numbers, ties, the length confound), every trivial judge's value on it, and the measures of judges
whose verdicts are known (perfect, reversed, position-biased, length-biased)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from verifiers.genrm.balanced import (
    balanced_accuracy,
    balanced_pairs,
    best_trivial,
    length_slope,
    measure_pairs,
    trivial_baselines,
    verdicts_of,
)


@pytest.fixture(scope="module")
def rows():
    from flows.genrm.labels import labelled_set

    return [x.as_row() for x in labelled_set(0, 0, 12, seed=5)]  # 12 general prompts, 8 responses each


@pytest.fixture(scope="module")
def pairs(rows):
    return balanced_pairs(rows, seed=0)


def test_the_three_classes_are_equal_and_the_worse_text_is_longer_in_half_of_each_decisive_class(pairs):
    classes = Counter(p.truth for p in pairs)
    assert classes[1] == classes[-1] == classes[0] > 20
    for c in (1, -1):
        decisive = [p for p in pairs if p.truth == c]
        worse_longer = [
            p for p in decisive if (len(p.response) > len(p.reference)) == (p.grades[0] < p.grades[1])
        ]
        assert len(worse_longer) == len(decisive) / 2, c
    for p in pairs:
        assert p.truth == (p.grades[0] > p.grades[1]) - (p.grades[0] < p.grades[1])
        assert len(p.response) != len(p.reference) and p.response != p.reference
    ties = [p for p in pairs if p.truth == 0]
    assert all(p.grades[0] == p.grades[1] for p in ties)


def test_the_set_spreads_over_prompts_depends_on_the_seed_alone_and_can_be_capped(rows, pairs):
    assert len({p.prompt_id for p in pairs}) == 12
    assert balanced_pairs(rows, seed=0) == pairs
    assert balanced_pairs(rows, seed=1) != pairs
    capped = balanced_pairs(rows, seed=0, max_per_class=9)  # rounded down to even: 8 per class
    assert Counter(p.truth for p in capped) == {1: 8, -1: 8, 0: 8}
    assert len({p.prompt_id for p in capped}) >= 8  # taken a prompt at a time, not from the first few
    assert balanced_pairs(rows, seed=0, domains=["math"]) == []


def test_without_ties_of_two_lengths_the_decisive_classes_stay_balanced():
    texts = {"a": (("right", 5), ("a long wrong one", 2)), "b": (("a long right one", 5), ("wrong", 2))}
    rows = [
        {"prompt_id": f"{kind}{i}", "question": f"q{i}", "response": text, "grade": grade}
        for kind, pair in texts.items()
        for i in range(4)
        for text, grade in pair
    ]
    pairs = balanced_pairs(rows, seed=0)
    assert Counter(p.truth for p in pairs) == {1: 4, -1: 4}


def test_every_trivial_judge_is_at_chance_on_it(pairs):
    base = trivial_baselines(pairs)
    assert set(base) == {
        "always the reference",
        "always the first shown",
        "the longer text wins",
        "a random verdict",
    }
    for name, b in base.items():
        assert b["balanced_accuracy"] == pytest.approx(1 / 3), name
        assert b["accuracy"] == pytest.approx(1 / 3), name  # the classes are equal
    ref = base["always the reference"]
    assert ref["recall"] == {"response wins": 0.0, "reference wins": 1.0, "tie": 0.0}
    assert ref["position_consistency"] == 1.0 and ref["length_slope"] == pytest.approx(0, abs=1e-9)
    first = base["always the first shown"]  # its two orders disagree on every pair: all ties
    assert first["recall"] == {"response wins": 0.0, "reference wins": 0.0, "tie": 1.0}
    assert first["position_consistency"] == 0.0 and first["first_shown_wins"] == 1.0
    longer = base["the longer text wins"]  # right on half of each decisive class, wrong on every tie
    assert longer["recall"] == {"response wins": 0.5, "reference wins": 0.5, "tie": 0.0}
    assert longer["length_slope"] > 0.4 and longer["position_consistency"] == 1.0
    assert base["a random verdict"]["position_consistency"] == pytest.approx(1 / 3)
    assert best_trivial(base)[1] == pytest.approx(1 / 3)


def _truth_judge(pairs, flip=False):
    """A judge that knows each pair's true verdict (from the texts' grades), shown either way round."""
    grade = {(p.question, p.response): p.grades[0] for p in pairs} | {
        (p.question, p.reference): p.grades[1] for p in pairs
    }

    def judge(question, first, second):
        d = grade[(question, first)] - grade[(question, second)]
        return float((d > 0) - (d < 0)) * (-1 if flip else 1)

    return judge


def test_a_judge_that_knows_the_grades_is_perfect_and_shows_no_length_bias(pairs):
    m = measure_pairs(pairs, verdicts_of(pairs, _truth_judge(pairs)))
    assert m["accuracy"] == m["balanced_accuracy"] == 1.0 and m["balanced_low"] > 0.95
    assert m["position_consistency"] == 1.0 and m["failed"] == 0
    assert m["length_slope"] == pytest.approx(0.0, abs=1e-9)  # the confound is orthogonal to the truth
    assert m["first_shown_wins"] == pytest.approx(0.5)
    reversed_ = measure_pairs(pairs, verdicts_of(pairs, _truth_judge(pairs, flip=True)))
    assert reversed_["balanced_accuracy"] == pytest.approx(1 / 3)  # right on the ties only


def test_a_judge_that_reads_quality_but_likes_length_has_a_positive_slope(pairs):
    truth = _truth_judge(pairs)

    def judge(question, first, second):  # the truth, except that a longer text wins a tie
        v = truth(question, first, second)
        return v if v else float((len(first) > len(second)) - (len(first) < len(second)))

    m = measure_pairs(pairs, verdicts_of(pairs, judge))
    assert m["recall"]["tie"] == 0.0 and m["recall"]["response wins"] == 1.0
    assert m["balanced_accuracy"] == pytest.approx(2 / 3)
    assert m["length_slope"] > 0.1


def test_failed_and_one_order_verdicts():
    from verifiers.genrm.balanced import Pair

    p = [Pair("p", "general", "q", "aa", "b", 1, (5, 2)), Pair("p", "general", "q", "c", "dd", -1, (2, 5))]
    m = measure_pairs(p, ([None, -1.0], [None, None]))  # the first pair failed; the second has one order
    assert m["failed"] == 1 and m["accuracy"] == 0.5
    assert math.isnan(m["position_consistency"])  # no pair was judged in both orders


def test_balanced_accuracy_and_its_interval():
    value, lo, hi = balanced_accuracy([1, 1, 1, 1, -1, -1], [1, 1, 1, None, -1, 1])
    assert value == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert lo < value < hi
    assert balanced_accuracy([1, -1], [1, -1]) == (1.0, 1.0, 1.0)


def test_length_slope_reads_the_length_term_only():
    truth = [1, -1, 0, 1, -1, 0, 1, -1]
    ratio = [1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0, 1.5]
    scores = [0.3 * t + 0.25 * r for t, r in zip(truth, ratio, strict=True)]
    assert length_slope(scores, truth, ratio) == pytest.approx(0.25)
    assert length_slope(scores[:3], truth[:3], ratio[:3]) == 0.0  # too few points
    assert length_slope(scores, truth, [1.0] * 8) == 0.0  # no spread in length
