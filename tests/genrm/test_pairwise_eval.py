"""Judge evaluation's pairwise part (`evaluate_judge(..., pairwise=True)`) through a scripted loopback judge:
the balanced set is judged in both orders and each order's verdict arrives from the response's side (what
the endpoint says equals what the same judge computed locally gives), position bias, failed and one-order
judgments, which rows are paired, and the trivial judges beside it."""

from __future__ import annotations

import pytest

from tests.genrm.scripted import blocks, scripted_judge
from verifiers.genrm.balanced import balanced_pairs, measure_pairs, verdicts_of
from verifiers.genrm.evaluate import evaluate_judge

# Per prompt: the grade of each text (the word in it says which). Lengths differ, so every pair is usable.
QUALITY = {"alpha": 4, "bravo": 5, "charlie": 4, "delta": 2, "echo": 1, "foxtrot-foxtrot": 2}


def rows(domain: str = "general", prompts: int = 6) -> list[dict]:
    return [
        {
            "prompt_id": f"p{i}",
            "domain": domain,
            "question": f"Question {i}: what is six times seven?",
            "reference": "42",
            "response": f"{word}: the answer is 42",
            "grade": grade,
        }
        for i in range(prompts)
        for word, grade in QUALITY.items()
    ]


def quality(text: str) -> int:
    return max(g for w, g in QUALITY.items() if w in text.split(":")[0].split())


def fair(first: str, second: str) -> float:
    a, b = quality(first), quality(second)
    return float((a > b) - (a < b))


def served(verdict):
    """A judge whose grades are right and whose pairwise reply is ``verdict(text A, text B)``."""

    def reply(message: str) -> str:
        b = blocks(message)
        if "response_a" not in b:
            return f"Grade: {quality(b['response'])}"
        return verdict(b["response_a"], b["response_b"])

    return reply


def as_reply(score: float) -> str:
    return f"Verdict: [[{ {1.0: 'A', -1.0: 'B', 0.0: 'C'}[score] }]]"


def pairwise(verdict, data=None, **kwargs) -> dict:
    with scripted_judge(served(verdict)) as (url, _):
        result = evaluate_judge(url, data or rows(), ns=(1,), draws=1, **kwargs)
    return result.pairwise


def test_the_endpoints_verdicts_are_scored_as_the_same_judge_computed_locally():
    data = rows()
    p = pairwise(lambda a, b: as_reply(fair(a, b)), data)
    pairs = balanced_pairs(data, seed=0, domains=["general"], max_per_class=48)
    local = measure_pairs(pairs, verdicts_of(pairs, lambda q, a, b: fair(a, b)))
    assert {k: p[k] for k in local} == local
    assert p["balanced_accuracy"] == 1.0 and p["position_consistency"] == 1.0 and p["failed"] == 0
    assert p["n"] == len(pairs) and p["domains"] == ["general"]
    assert p["best_trivial_accuracy"] == pytest.approx(1 / 3)
    assert set(p["baselines"]) == {
        "always the reference",
        "always the first shown",
        "the longer text wins",
        "a random verdict",
    }


def test_a_reversed_judge_is_right_on_the_ties_only():
    p = pairwise(lambda a, b: as_reply(-fair(a, b)))
    assert p["recall"] == {"response wins": 0.0, "tie": 1.0, "reference wins": 0.0}
    assert p["position_consistency"] == 1.0


@pytest.mark.parametrize("position", ["A", "B"])
def test_a_judge_that_always_prefers_one_position_is_all_ties_and_inconsistent(position):
    p = pairwise(lambda a, b: f"Verdict: [[{position}]]")
    assert p["balanced_accuracy"] == pytest.approx(1 / 3) and p["position_consistency"] == 0.0
    assert p["first_shown_wins"] == (1.0 if position == "A" else 0.0) and p["failed"] == 0


def test_failed_judgments_count_as_wrong_and_one_order_pairs_have_no_consistency():
    """No verdict when echo is one of the two texts; only the order with echo shown first fails for
    delta: those pairs keep one order's verdict."""

    def verdict(a, b):
        if "echo" in a + b:
            return "no idea"
        if a.startswith("delta"):
            return "no idea"
        return as_reply(fair(a, b))

    data = rows()
    p = pairwise(verdict, data)
    pairs = balanced_pairs(data, seed=0, domains=["general"], max_per_class=48)
    with_echo = sum("echo" in x.response + x.reference for x in pairs)
    one_order = sum(
        "delta" in x.response + x.reference and "echo" not in x.response + x.reference for x in pairs
    )
    assert with_echo and one_order
    assert p["failed"] == with_echo
    assert p["accuracy"] == pytest.approx((len(pairs) - with_echo) / len(pairs))
    assert p["position_consistency"] == 1.0  # over the pairs judged in both orders only


def test_the_set_is_built_from_the_pair_domains_else_from_every_row():
    assert pairwise(lambda a, b: as_reply(fair(a, b)), rows("math"))["domains"] == ["math"]  # no general
    mixed = rows("general", 3) + [r | {"prompt_id": "m" + r["prompt_id"]} for r in rows("math", 3)]
    assert pairwise(lambda a, b: as_reply(fair(a, b)), mixed)["domains"] == ["general"]
    assert pairwise(lambda a, b: as_reply(fair(a, b)), mixed, pair_domains=None)["domains"] == [
        "general",
        "math",
    ]


def test_rows_that_make_no_pair_are_not_compared():
    single = [r for r in rows() if r["response"].startswith("alpha")]  # one text per prompt
    assert pairwise(lambda a, b: "Verdict: [[C]]", single) is None
