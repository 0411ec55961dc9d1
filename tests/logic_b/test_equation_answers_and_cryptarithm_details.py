"""Number puzzles, exact details: an answer written as an equation must state the target (on either
side), positive-integer rules reject zero, cryptarithm rule breaks carry a full verdict, and game of 24
generation stays within its search budget."""

from __future__ import annotations

import pytest

from verifiers.logic.arith import evaluate, score_expression
from verifiers.logic.tasks.cryptarithm import TASK as CRYPT
from verifiers.logic.tasks.game_of_24 import SEARCH_BUDGET
from verifiers.logic.tasks.game_of_24 import TASK as G24


def test_the_target_may_come_first_in_an_equation():
    assert score_expression("24 = (8 - 2) * 4", [8, 2, 4], 24) == (1.0, {"correct": True})
    assert score_expression("24=(8-2)*4", [8, 2, 4], 24) == (1.0, {"correct": True})


def test_the_target_may_come_last_in_an_equation():
    assert score_expression("(8 - 2) * 4 = 24", [8, 2, 4], 24) == (1.0, {"correct": True})
    assert evaluate("(8 - 2) * 4 = 24").numbers == [8, 2, 4]


@pytest.mark.parametrize("answer", ["8 x 3 x 1 x 1", "8X3X1X1", "3 x (8 x 1 x 1)"])
def test_a_letter_x_between_numbers_means_multiplication(answer):
    assert G24.score({"numbers": [1, 1, 3, 8], "target": 24}, answer) == (1.0, {"correct": True})


def test_an_equation_stating_another_result_is_wrong_not_unparseable():
    assert score_expression("(8 - 2) * 4 = 25", [8, 2, 4], 24) == (
        0.0,
        {"correct": False, "reason": "the equation states another result", "stated": 25},
    )


def test_a_non_numeric_result_after_the_equals_sign_is_a_parse_error():
    assert score_expression("(8 - 2) * 4 = twenty-four", [8, 2, 4], 24) == (
        0.0,
        {"error": "parse error: 'twenty-four' after '=' is not a number"},
    )


def test_positive_integer_rule_rejects_a_zero_intermediate():
    assert score_expression("(3 - 3) + 5", [3, 3, 5], 5, positive_integers=True) == (
        0.0,
        {"correct": False, "reason": "an intermediate result is not a positive integer", "intermediate": "0"},
    )
    assert score_expression("(3 - 3) + 5", [3, 3, 5], 5) == (1.0, {"correct": True})


def test_game_of_24_generation_never_exceeds_the_search_budget():
    # Several of these seeds first draw numbers whose (solvable) search needs more than the budget;
    # the generator must redraw rather than wait on them.
    for seed in range(15):
        nodes = G24.generate(6, seed).puzzle["solver_nodes"]
        assert nodes <= SEARCH_BUDGET, (seed, nodes)


SEND_MORE = {"addends": ["SEND", "MORE"], "result": "MONEY", "hints": {}}


def test_cryptarithm_missing_letter_verdict():
    assert CRYPT.score(SEND_MORE, "S=9, E=5, N=6, D=7, M=1, O=0, R=8") == (
        0.0,
        {"correct": False, "reason": "letters without a digit", "missing": ["Y"]},
    )


def test_cryptarithm_leading_zero_verdict_names_the_first_such_word():
    assert CRYPT.score(SEND_MORE, "S=9, E=5, N=6, D=7, M=0, O=1, R=8, Y=2") == (
        0.0,
        {"correct": False, "reason": "a number starts with 0", "word": "MORE"},
    )
