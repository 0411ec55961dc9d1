"""Math verifier: equivalence through math-verify, fast paths that agree with it, rewards, timeouts."""

from __future__ import annotations

import random

import pytest

from verifiers.math import MathVerifier, fast_verdict, layout_normal, math_verify_equal, reference_answer


@pytest.mark.parametrize(
    ("gold", "answer", "equal"),
    [
        # fractions and decimals
        (r"\frac{1}{2}", "0.5", True),
        (r"\frac{1}{2}", "1/2", True),
        (r"\frac{1}{3}", "0.333333", True),
        (r"\frac{1}{3}", "0.33", False),
        ("3", "3.0", True),
        ("1000", "1,000", True),
        # latex expressions
        (r"\frac{\sqrt{2}}{2}", r"\sqrt{2}/2", True),
        ("2\\sqrt{3}", "\\sqrt{12}", True),
        ("x^2+2x+1", "(x+1)^2", True),
        ("x^2+2x+1", "(x-1)^2", False),
        ("x=3", "3", True),
        (r"\pi", "3.14159", False),
        # intervals and sets
        ("[1,2)", "[1, 2)", True),
        ("(1,2]", "[1,2]", False),
        (r"(-\infty, 2]", r"(-\infty,2]", True),
        (r"\{1,2,3\}", r"\{3,2,1\}", True),
        (r"\{1,2,3\}", r"\{1,2\}", False),
        # percent and units
        (r"50\%", "0.5", True),
        (r"50\%", "50", True),
        (r"10 \text{ cm}", "10", True),
        (r"10", r"10\text{ meters}", True),
    ],
)
def test_math_verify_equivalences(gold, answer, equal):
    assert math_verify_equal(gold, answer) is equal
    (reward,) = MathVerifier(format_weight=0).verify(
        [{"reference": gold, "response": f"\\boxed{{{answer}}}"}]
    )
    assert reward.details["correct"] is equal and reward.reward == float(equal)


def test_fast_paths_agree_with_math_verify():
    """Every verdict a fast path gives must be math-verify's verdict (random plain numbers + layouts)."""
    rng = random.Random(0)
    forms = [
        lambda v: str(v),
        lambda v: f"{v}.0",
        lambda v: f"{v}.50",
        lambda v: f"\\frac{{{v}}}{{4}}",
        lambda v: f"{v}/8",
        lambda v: f"-{v}",
        lambda v: f"{v}.0000004",
        lambda v: f"{v * 1000003}",
        lambda v: f"\\dfrac{{{v}}}{{4}}",
        lambda v: f"{v}.000001",
    ]
    pairs = [
        (rng.choice(forms)(rng.randint(0, 30)), rng.choice(forms)(rng.randint(0, 30))) for _ in range(150)
    ]
    pairs += [
        ("x^2 + 1", "x^2+1"),
        (r"\left( 1, 2 \right)", "(1,2)"),
        (r"\dfrac{x}{2}", r"\frac{x}{2}"),
        ("1 2", "12"),
        ("a b", "ab"),
        (r"\text{a b}", r"\text{ab}"),
    ]
    decided = 0
    for gold, answer in pairs:
        quick = fast_verdict(gold, answer)
        if quick is not None:
            decided += 1
            assert quick == math_verify_equal(gold, answer), (gold, answer)
    assert decided > 100  # the fast path is not vacuous


def test_layout_normal_keeps_meaningful_spaces():
    assert layout_normal(r"\left( 1, 2 \right)") == "(1,2)"
    assert layout_normal("1 2") == "1 2"
    assert layout_normal(r"\text{a b}") is None
    assert layout_normal(r"\pi x") is None


def test_reward_combines_correctness_and_format_within_one():
    items = [
        {"reference": "4", "response": "<think>2+2</think> so \\boxed{4}"},  # correct, formatted
        {"reference": "4", "response": "the answer is 4"},  # correct, no box
        {"reference": "4", "response": "\\boxed{5}"},  # wrong, formatted: the box alone earns nothing
        {"reference": "Final: \\boxed{4}", "response": "\\boxed{4}"},  # reference given as a solution
    ]
    rewards = MathVerifier(format_weight=0.25).verify(items)
    assert [r.reward for r in rewards] == [1.0, 0.75, 0.0, 1.0]
    assert rewards[1].details["extracted_by"] == "phrase"
    assert rewards[3].details["reference"] == "4"


def test_bad_items_get_an_error_not_an_exception():
    rewards = MathVerifier().verify(
        [{"response": "\\boxed{1}"}, {"reference": "1"}, {"reference": "1", "response": 5}]
    )
    assert all(r.reward == 0 and "error" in r.details for r in rewards)


def test_no_answer_is_wrong_not_an_error():
    (reward,) = MathVerifier().verify(
        [{"reference": "1", "response": "I could not work this out, sorry friend."}]
    )
    assert reward.reward == 0 and reward.details["answer"] is None and "error" not in reward.details


def test_per_item_timeout_gives_an_error_detail():
    (reward,) = MathVerifier(timeout_s=1).verify([{"reference": "5", "response": r"\boxed{9^{9^{9}}}"}])
    assert reward.reward == 0 and reward.details["format_ok"]  # formatted, not correct
    assert "timed out" in reward.details["error"]


def test_pool_matches_in_process_and_caches():
    items = [
        {"reference": r"\frac{1}{2}", "response": f"\\boxed{{{a}}}"}
        for a in [r"0.5", r"\frac{2}{4}", "x", r"\sqrt{1/4}", "1/3", r"\frac{1}{2}", "0.5"]
    ] * 3
    with MathVerifier(workers=2) as pooled:
        got = [r.details["correct"] for r in pooled.verify(items)]
    want = [r.details["correct"] for r in MathVerifier(workers=0).verify(items)]
    assert got == want == [True, True, False, True, False, True, True] * 3


def test_reference_answer_unwraps():
    assert reference_answer("$\\frac{1}{2}$") == "\\frac{1}{2}"
    assert reference_answer("We find \\boxed{7}.") == "7"


def _latex_set(members: list[int], sep: str = ", ") -> str:
    return "\\{" + sep.join(map(str, members)) + "\\}"


def _structured_forms(rng: random.Random) -> list[str]:
    """Radicals, percentages, units, integer sets, intervals and polynomials, with near-misses of each."""
    a, b = rng.randint(1, 12), rng.choice([2, 3, 5, 6, 8, 12, 18, 50])
    lo = rng.randint(-3, 5)
    hi = lo + rng.choice([1, 2])
    members = rng.sample(range(-2, 6), 3)
    return [
        f"{a}\\sqrt{{{b}}}",
        f"\\sqrt{{{a * a * b}}}",
        f"{a} \\sqrt{{{b}}}",
        f"-{a}\\sqrt{{{b}}}",
        f"\\sqrt{{{a * a}}}",
        f"{a}",
        f"\\sqrt{{{a * a * b + 1}}}",
        f"{a + 1}\\sqrt{{{b}}}",
        f"\\sqrt{b}",
        f"{a}\\%",
        f"{100 * a}\\%",
        f"{a} \\text{{ cm}}",
        f"{a}\\text{{cm}}",
        f"{a} \\text{{ meters}}",
        f"[{lo}, {hi})",
        f"({lo},{hi})",
        f"[{lo},{hi}]",
        f"({lo}, {hi}]",
        f"({hi}, {lo})",
        f"[{lo}, {hi + 1})",
        _latex_set(members),
        _latex_set(members[::-1], ","),
        _latex_set(members[:2]),
        _latex_set(members[:1] * 2),
        _latex_set([*members[:2], members[2] + 7]),
        f"x^2+{2 * a}x+{a * a}",
        f"(x+{a})^2",
        f"(x-{a})^2",
        f"x^2 + {2 * a}x + {a * a}",
        f"x^2+{a * a}",
        f"(x+{a})(x+{a})",
        f"x(x+{2 * a})+{a * a}",
        f"x^{{2}}+{2 * a}x+{a * a + 1}",
        f"x^2{a}",
        "2x",
        "x+x",
        "(x)",
        "x",
        f"{a}x^2-{a}",
    ]


def test_structured_fast_paths_agree_with_math_verify():
    """Radicals, percentages, units, sets, intervals, polynomials: every fast verdict is math-verify's."""
    rng = random.Random(1)
    decided = 0
    for _ in range(2):
        forms = _structured_forms(rng)
        for gold in forms:
            for answer in rng.sample(forms, 8):
                quick = fast_verdict(gold, answer)
                if quick is not None:
                    decided += 1
                    assert quick is math_verify_equal(gold, answer), (gold, answer)
    assert decided > 100  # the fast paths take many of these pairs


_NEAR_MISSES = [
    "0",
    "-0",
    "0\\sqrt{2}",
    "-\\sqrt{4}",
    "-2",
    "2",
    "\\sqrt4",
    "\\sqrt48",
    "4\\sqrt{3}",
    "\\sqrt{48}",
    "1\\%",
    "100\\%",
    "1",
    "x",
    "1x",
    "x+0",
    "x^{02}+1",
    "x^2+1",
    "x^0+x",
    "x+1",
    "x^21",
    "(2, 1)",
    "(1, 2)",
    "[1, 2)",
    "\\{1, 1\\}",
    "\\{1, 2\\}",
    "\\{2, 1\\}",
    "\\{0, -0\\}",
    "2 \\text{ cm}^2",
    "2\\text{ apples}",
]


def test_structured_near_misses_agree_with_math_verify():
    """Every pair of a hand-picked list of forms that read alike but may not be alike."""
    for gold in _NEAR_MISSES:
        for answer in _NEAR_MISSES:
            quick = fast_verdict(gold, answer)
            if quick is not None:
                assert quick is math_verify_equal(gold, answer), (gold, answer)
