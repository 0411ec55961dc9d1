"""Targeted checks behind the fuzz contract: the strict answer reader, the bugs it fixed, and rules that
a plausible regression would drop (sudoku boxes, kakuro's distinct digits, one zebra value per cell).
Each rule test builds an answer that breaks only that rule, so it fails if the rule check goes."""

from __future__ import annotations

import pytest

from verifiers.logic import TASKS
from verifiers.logic.base import ParseError, extract_answer
from verifiers.logic.latin import latin_violations
from verifiers.logic.textutil import first_difference, integers, no_repeats, scan


def verify(name: str, puzzle: dict, answer: str) -> tuple[float, dict]:
    return TASKS[name].verify(puzzle, f"<answer>{answer}</answer>")


def render(grid: list[list[object]]) -> str:
    return "\n".join(" ".join(map(str, row)) for row in grid)


# --- the shared reader ---------------------------------------------------------------------------------


def test_scan_reads_tokens_between_separators_only():
    assert scan(" 1, 2;\n3  ", r"\d+") == ["1", "2", "3"]
    assert scan("", r"\d+") == []
    with pytest.raises(ParseError, match="'zz9'"):
        scan("1 2 zz9", r"\d+")
    with pytest.raises(ParseError, match="'-'"):
        scan("1 - 2", r"\d+")


@pytest.mark.parametrize("text", ["1 ２", "A, С"])  # a full-width digit; a Cyrillic capital Es
def test_scan_refuses_lookalike_characters(text):
    with pytest.raises(ParseError):
        scan(text, r"[A-Z]|\d")


def test_no_repeats_names_the_repeated_item():
    no_repeats([1, 2, 3], "vertex")
    with pytest.raises(ParseError, match="vertex 2 is given more than once"):
        no_repeats([1, 2, 2], "vertex")


def test_extract_answer_takes_the_last_closed_block():
    assert extract_answer("<answer>a<answer>b</answer>") == "b"
    assert extract_answer("<answer>1</answer> text <answer>") == "1"
    assert extract_answer("<answer>" * 100_000) is None


def test_overlong_answers_are_parse_errors():
    inst = TASKS["object_counting"].generate(1, 0)
    reward, details = verify("object_counting", inst.puzzle, "I count " * 3_000 + inst.answer)
    assert reward == 0.0 and details["error"].startswith("parse error: answer longer than")


# --- bugs the fuzz contract found -------------------------------------------------------------------------


def test_calcudoku_answer_with_zero_scores_zero():
    task = TASKS["calcudoku"]
    inst = next(
        inst
        for inst in (task.generate(1, seed) for seed in range(50))
        if any(cage["op"] == "/" for cage in inst.puzzle["cages"])
    )
    zeros = render([[0] * 4 for _ in range(4)])  # 0 was a ZeroDivisionError in a '/' cage
    reward, details = task.score(inst.puzzle, zeros)  # score itself, not only verify
    assert reward == 0.0 and any("outside 1..4" in v for v in details["violations"])


def test_dyck_completion_refuses_junk_characters():
    puzzle = {"prefix": "((", "length": 4}
    assert verify("dyck_language", puzzle, ") )")[0] == 1.0
    for junk in (") )x", ") ) 7", "x) )", ")) )"):
        reward, details = verify("dyck_language", puzzle, junk)
        assert reward == 0.0, junk
    assert verify("dyck_language", puzzle, ") )x")[1]["error"].startswith("parse error")


def test_math_path_checks_both_sides_and_the_operators():
    puzzle = {"operands": [None, 5, None], "operators": ["-", "+"], "result": 1}
    for good in ("4 - 5 + 2 = 1", "4-5+2", "4, 2", "`4 − 5 + 2 = 1`"):
        assert verify("math_path", puzzle, good)[0] == 1.0, good
    assert verify("math_path", puzzle, "4 - 5 + 2 = 9")[1]["reason"] == "the right-hand side was changed"
    assert verify("math_path", puzzle, "4 + 5 - 8 = 1")[1]["reason"] == "an operator was changed"
    for bad in ("4 - 5 + 2 = 1 = 1", "4 - 5 + 2 = 1 maybe", "4 - 5 + 2 1", "4 2 7"):
        reward, details = verify("math_path", puzzle, bad)
        assert reward == 0.0 and details["error"].startswith("parse error"), bad


def test_expressions_must_state_the_target_if_they_state_a_result():
    puzzle = {"numbers": [3, 3, 8, 8], "target": 24}
    assert verify("game_of_24", puzzle, "8/(3-8/3) = 24")[0] == 1.0
    assert verify("game_of_24", puzzle, "8/(3-8/3) = 25")[1]["reason"] == "the equation states another result"
    assert verify("game_of_24", puzzle, "8/(3-8/3) = 24 = 24")[1]["error"].startswith("parse error")


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("boolean_expressions", "zz9"),
        ("time_sequence", "maybe"),
        ("web_of_lies", "perhaps"),
        ("knights_knaves", "zz9"),
        ("word_sorting_mistake", "7"),
        ("sudoku", "zz9"),
        ("cryptarithm", "Z=1"),  # a letter the puzzle does not have
    ],
)
def test_a_stray_token_after_the_gold_answer_is_a_parse_error(name, extra):
    inst = TASKS[name].generate(1, 0)
    reward, details = verify(name, inst.puzzle, f"{inst.answer}, {extra}")
    assert reward == 0.0 and details["error"].startswith("parse error"), details


def test_set_answers_repeated_are_parse_errors():
    names = (
        "graph_coloring",
        "boolean_sat",
        "cryptarithm",
        "knights_knaves",
        "star_placement",
        "minesweeper",
    )
    for name in names + ("boolean_expressions",):
        inst = TASKS[name].generate(1, 0)
        reward, details = verify(name, inst.puzzle, f"{inst.answer}, {inst.answer}")
        assert reward == 0.0 and "more than once" in details["error"], (name, details)


# --- rules a regression could drop ------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", [1, 4])  # 4x4 with 2x2 boxes, 9x9 with 3x3 boxes
def test_sudoku_box_rule(difficulty):
    """Rows that are shifts of one row form a latin square whose boxes repeat digits."""
    inst = TASKS["sudoku"].generate(difficulty, 0)
    first = inst.puzzle["solution"][0]
    n = len(first)
    shifted = [first[r:] + first[:r] for r in range(n)]
    assert latin_violations(shifted) == []  # rows and columns are fine: only boxes are broken
    no_givens = inst.puzzle | {"givens": [[0] * n for _ in range(n)]}
    assert verify("sudoku", no_givens, inst.answer)[0] == 1.0
    reward, details = verify("sudoku", no_givens, render(shifted))
    assert reward == 0.0 and any("box" in v for v in details["violations"]), details


KAKURO = {  # a 2x2 block of white cells; every run of two cells must add up to 4
    "n": 3,
    "white": [[1, 1], [1, 2], [2, 1], [2, 2]],
    "runs": [
        {"cells": cells, "sum": 4}
        for cells in ([[1, 1], [1, 2]], [[2, 1], [2, 2]], [[1, 1], [2, 1]], [[1, 2], [2, 2]])
    ],
    "given": [],
    "solution": [["#", "#", "#"], ["#", "1", "3"], ["#", "3", "1"]],
}


def test_kakuro_repeated_digit_in_a_run():
    assert verify("kakuro", KAKURO, "# # #\n# 1 3\n# 3 1")[0] == 1.0
    reward, details = verify("kakuro", KAKURO, "# # #\n# 2 2\n# 2 2")  # every sum is right
    assert reward == 0.0 and all("repeats a digit" in v for v in details["violations"]), details
    reward, details = verify("kakuro", KAKURO, "# # #\n# 1 3\n5 3 1")  # a digit in a black cell
    assert reward == 0.0 and details["violations"] == ["black cell (3,1) holds 5"]


def test_zebra_two_values_for_one_attribute():
    inst = TASKS["zebra_puzzle"].generate(3, 1)
    houses = inst.puzzle["houses"]
    n = len(houses)
    # each house keeps its right values and also names its neighbour's value of the second attribute
    doubled = [[*h, houses[(p + 1) % n][1]] for p, h in enumerate(houses)]
    answer = "\n".join(f"House {p + 1}: {', '.join(h)}" for p, h in enumerate(doubled))
    reward, details = verify("zebra_puzzle", inst.puzzle, answer)
    assert reward == 0.0 and details["reason"] == "several values", details
    repeated = "\n".join(f"House {p + 1}: {', '.join([*h, h[1]])}" for p, h in enumerate(houses))
    assert verify("zebra_puzzle", inst.puzzle, repeated)[0] == 0.0


def test_integers_read_signs_unless_told_and_ascii_digits_only():
    assert integers("-3 then 4") == [-3, 4]  # signed is the default
    assert integers("5-3", signed=False) == [5, 3]  # '-' as an operator
    assert integers("\uff13 and 4") == [4]  # a full-width 3 is not a digit of an answer


def test_first_difference_points_at_the_first_mismatch_or_the_shorter_end():
    assert first_difference("abcd", "abXd") == 2
    assert first_difference("abc", "abcdef") == 3
    assert first_difference("", "a") == 0
