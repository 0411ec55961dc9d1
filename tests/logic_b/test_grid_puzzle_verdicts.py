"""Grid puzzles, exact verdicts: Calcudoku judges cages once the grid is a Latin square, Lights Out
lists at most ten cells still lit, and Kakuro's solution count answers the uniqueness question."""

from __future__ import annotations

from verifiers.logic.tasks.calcudoku import TASK as CALCUDOKU
from verifiers.logic.tasks.kakuro import TASK as KAKURO
from verifiers.logic.tasks.lights_out import TASK as LIGHTS


def test_calcudoku_latin_square_breaking_the_cages_is_wrong():
    inst = CALCUDOKU.generate(2, 0)
    swapped = [[{1: 2, 2: 1}.get(v, v) for v in row] for row in inst.puzzle["solution"]]
    reward, details = CALCUDOKU.score(inst.puzzle, "\n".join(" ".join(map(str, row)) for row in swapped))
    assert reward == 0.0 and details["correct"] is False
    assert details["violations"] and all(v.startswith("cage at ") for v in details["violations"])


def test_lights_out_lists_the_first_ten_cells_still_lit():
    puzzle = {"n": 4, "lights": [[1] * 4 for _ in range(4)]}
    first_ten = "[[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [2, 3], [2, 4], [3, 1], [3, 2]]"
    assert LIGHTS.score(puzzle, "0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0") == (
        0.0,
        {"correct": False, "violations": [f"16 light(s) still on: {first_ten}"]},
    )


def test_kakuro_count_stops_at_two_by_default():
    # One run of two cells summing to 5 has four fillings: 1+4, 4+1, 2+3, 3+2.
    puzzle = {"white": [[0, 0], [0, 1]], "runs": [{"cells": [[0, 0], [0, 1]], "sum": 5}], "given": []}
    assert KAKURO.count_solutions(puzzle) == 2
    assert KAKURO.count_solutions(puzzle, limit=10) == 4
