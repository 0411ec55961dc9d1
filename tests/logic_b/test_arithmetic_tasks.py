"""Number puzzles: safe exact evaluation, any valid answer accepted, rule breaks named."""

from __future__ import annotations

from fractions import Fraction

import pytest

from verifiers.logic.arith import ExprError, evaluate, solve
from verifiers.logic.tasks.cryptarithm import TASK as CRYPT
from verifiers.logic.tasks.cryptarithm import solve as solve_crypt
from verifiers.logic.tasks.game_of_24 import TASK as G24
from verifiers.logic.tasks.math_path import TASK as PATH
from verifiers.logic.tasks.mathador import TASK as MATHADOR
from verifiers.logic.tasks.number_wall import TASK as WALL


def test_evaluation_is_exact_and_safe():
    assert evaluate("8 / (3 - 8/3)").value == 24
    assert evaluate("(8 − 2) × 4 = 24").value == 24
    assert evaluate("24 = 6 ÷ 1 * 4").value == 24
    assert evaluate("1/3 + 1/3").value == Fraction(2, 3)
    for bad in ("2 ** 5", "__import__('os').system('true')", "abs(-24)", "x + 1", "2.5 * 2", "-3 + 27"):
        with pytest.raises(ExprError):
            evaluate(bad)
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / (2 - 2)")


def test_solver_finds_fraction_solutions_and_proves_absence():
    expr, _ = solve([3, 3, 8, 8], 24)
    assert evaluate(expr).value == 24
    assert solve([1, 1, 1, 1], 24)[0] is None


def test_game_of_24_accepts_any_valid_expression():
    puzzle = {"numbers": [3, 3, 8, 8], "target": 24}
    assert G24.score(puzzle, "8/(3-8/3)")[0] == 1.0
    assert G24.score(puzzle, "`8 ÷ (3 − 8 ÷ 3) = 24`")[0] == 1.0
    assert G24.score(puzzle, "8 + 8 + 3 + 3")[1]["reason"] == "wrong value"
    assert G24.score(puzzle, "8 * 3")[1]["reason"] == "numbers used differ from the given ones"
    assert G24.score(puzzle, "8 / (3 - 3) + 8")[1]["reason"] == "division by zero"
    assert "parse error" in G24.score(puzzle, "eight times three")[1]["error"]


def test_mathador_requires_positive_whole_intermediates():
    puzzle = {"numbers": [2, 3, 4], "target": 3}
    assert MATHADOR.score(puzzle, "4 - 3 + 2")[0] == 1.0
    reward, details = MATHADOR.score(puzzle, "2 - 3 + 4")  # 2 - 3 = -1 on the way
    assert reward == 0.0 and details["reason"] == "an intermediate result is not a positive integer"


def test_math_path_accepts_any_filling_in_several_formats():
    puzzle = {"operands": [None, 2, None], "operators": ["*", "+"], "result": 10}
    for answer in ("4 * 2 + 2 = 10", "3*2+4", "1, 8", "2 6"):
        assert PATH.score(puzzle, answer)[0] == 1.0, answer
    assert PATH.score(puzzle, "4 * 3 + 2 = 10")[1]["reason"] == "a given number was changed"
    assert PATH.score(puzzle, "0 * 2 + 10")[1]["reason"] == "a blank is not a digit 1-9"
    assert PATH.score(puzzle, "1 * 2 + 1")[1]["reason"] == "equation does not hold"


def test_number_wall_accepts_bottom_row_or_whole_wall():
    inst = WALL.generate(2, 3)
    bottom = [int(x) for x in inst.answer.split()]
    rows = [bottom]
    while len(rows[-1]) > 1:
        rows.append([a + b for a, b in zip(rows[-1], rows[-1][1:], strict=False)])
    whole = "\n".join(" ".join(map(str, r)) for r in reversed(rows))
    assert WALL.score(inst.puzzle, whole)[0] == 1.0
    broken = whole.replace(str(rows[-1][0]), str(rows[-1][0] + 1), 1)
    assert WALL.score(inst.puzzle, broken)[1]["reason"] == "the submitted wall breaks the sum rule"


def test_number_wall_uniqueness_is_a_rank_condition():
    inst = WALL.generate(4, 0)
    assert WALL.count_solutions(inst.puzzle) == 1
    only_top = {"width": 4, "shown": [[None] * 4, [None] * 3, [None] * 2, [50]]}
    assert WALL.count_solutions(only_top) == 2


def test_cryptarithm_solver_on_send_more_money():
    solutions, _ = solve_crypt(["SEND", "MORE"], "MONEY")
    assert solutions == [{"S": 9, "E": 5, "N": 6, "D": 7, "M": 1, "O": 0, "R": 8, "Y": 2}]


def test_cryptarithm_rules_are_named():
    puzzle = {"addends": ["SEND", "MORE"], "result": "MONEY", "hints": {}}
    gold = "S=9, E=5, N=6, D=7, M=1, O=0, R=8, Y=2"
    assert CRYPT.score(puzzle, gold.lower().replace("=", " -> "))[0] == 1.0
    assert CRYPT.score(puzzle, gold.replace("Y=2", "Y=5"))[1]["reason"] == "two letters share a digit"
    assert CRYPT.score(puzzle, gold.replace(", Y=2", ""))[1]["missing"] == ["Y"]
    zero = "S=0, E=5, N=6, D=7, M=1, O=9, R=8, Y=2"
    assert CRYPT.score(puzzle, zero)[1]["reason"] == "a number starts with 0"


@pytest.mark.parametrize("difficulty", [1, 3, 5])
def test_cryptarithm_instances_are_unique_with_their_hints(difficulty):
    for seed in range(6):
        inst = CRYPT.generate(difficulty, seed)
        assert CRYPT.count_solutions(inst.puzzle) == 1
        for letter, digit in inst.puzzle["hints"].items():
            assert f"{letter}={digit}" in inst.answer and f"{letter}={digit}" in inst.prompt


def test_solver_on_one_number_and_within_a_node_budget():
    assert solve([7], 7) == ("7", 1) and solve([7], 8) == (None, 1)
    expr, nodes = solve([3, 3, 8, 8], 24)
    assert expr is not None and nodes > 2
    # A budget of exactly the nodes the search needs still finds it; one node fewer gives up.
    assert solve([3, 3, 8, 8], 24, max_nodes=nodes) == (expr, nodes)
    assert solve([3, 3, 8, 8], 24, max_nodes=nodes - 1) == (None, nodes)


def test_x_as_multiplication_on_either_side_of_the_equation():
    """`x` between numbers is multiplication, also when deciding which side of '=' states the result
    (an equation whose only operators were x was read backwards and refused)."""
    p = {"numbers": [1, 1, 3, 8], "target": 24}
    for answer in ("8 x 3 x 1 x 1 = 24", "24 = 8 X 3 x 1 x 1", "8 x 3 x 1 x 1", "8 * 3 * 1 * 1 = 24"):
        assert G24.score(p, answer) == (1.0, {"correct": True}), answer
    assert G24.score(p, "8 x 3 x 1 x 1 = 25")[1]["stated"] == 25
