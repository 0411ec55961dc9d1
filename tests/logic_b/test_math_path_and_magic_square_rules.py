"""Math path and magic square: exact scoring records, explained parse errors, and generated puzzles
that are solvable, deterministic and as large as their level says."""

from __future__ import annotations

import random

import pytest

from verifiers.logic.tasks.magic_square import TASK as MAGIC
from verifiers.logic.tasks.magic_square import magic, shuffled, violations
from verifiers.logic.tasks.math_path import TASK as PATH

# ? * 2 + ? = 10
PUZZLE = {"operands": [None, 2, None], "operators": ["*", "+"], "result": 10}


def test_math_path_right_answers_score_one_with_the_filling():
    for answer in ("4 * 2 + 2 = 10", "$4*2+2 = 10$", "4 * 2 + 2", "4, 2", "4 2"):
        assert PATH.score(PUZZLE, answer) == (1.0, {"correct": True, "filled": [4, 2, 2]}), answer


def test_math_path_wrong_answers_name_the_rule_broken():
    assert PATH.score(PUZZLE, "4 * 2 + 2 = 11") == (
        0.0,
        {"correct": False, "reason": "the right-hand side was changed", "right_side": "11"},
    )
    assert PATH.score(PUZZLE, "4 + 2 + 2 = 10") == (
        0.0,
        {"correct": False, "reason": "an operator was changed"},
    )
    assert PATH.score(PUZZLE, "4 * 3 + 2 = 10") == (
        0.0,
        {"correct": False, "reason": "a given number was changed", "operand": 2},
    )
    assert PATH.score(PUZZLE, "5, 2") == (
        0.0,
        {"correct": False, "reason": "equation does not hold", "left_side": "12", "right_side": 10},
    )
    puzzle = {"operands": [None, 2, None], "operators": ["/", "+"], "result": 10}
    assert PATH.score(puzzle, "3 / 2 + 9")[1]["left_side"] == "21/2"


def test_math_path_blanks_must_be_digits_one_to_nine():
    puzzle = {"operands": [9, None], "operators": ["+"], "result": 19}
    assert PATH.score(puzzle, "9 + 10 = 19") == (
        0.0,
        {"correct": False, "reason": "a blank is not a digit 1-9", "operand": 2},
    )
    assert PATH.score({**PUZZLE, "result": 2}, "0 * 2 + 2")[1]["operand"] == 1


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("4", "parse error: expected 2 digits for the blanks, found 1 numbers"),
        ("4 * 2 + 2 = 10 = 10", "parse error: more than one '=' in the equation"),
        ("4 * 2 + 2 = 5 + 5", "parse error: expected one number after '='"),
        ("4 * 2 + 2 =", "parse error: expected one number after '='"),
        ("4 2 * + 2 = 10", "parse error: expected the equation with 3 numbers and 2 operators"),
        ("4 * 2 + = 10", "parse error: expected the equation with 3 numbers and 2 operators"),
        ("4 * 2 + 2 = 10 X", "parse error: unexpected 'X' in the completed equation"),
    ],
)
def test_math_path_parse_errors_are_explained(answer, message):
    assert PATH.verify(PUZZLE, f"<answer>{answer}</answer>") == (0.0, {"error": message})


def test_math_path_generated_puzzles_are_solvable_and_sized_by_level():
    digits, results = set(), set()
    for difficulty, (count, blanks, ops) in PATH.sizes.items():
        for seed in range(25):
            inst = PATH.generate(difficulty, seed)
            assert inst == PATH.generate(difficulty, seed)
            puzzle = inst.puzzle
            assert PATH.score(puzzle, inst.answer) == (
                1.0,
                {"correct": True, "filled": _numbers(inst.answer)},
            )
            assert len(puzzle["operands"]) == count and len(puzzle["operators"]) == count - 1
            assert sum(n is None for n in puzzle["operands"]) == blanks
            assert set(puzzle["operators"]) <= set(ops)
            assert PATH.measure(puzzle) == 9.0**blanks
            template = " ".join(
                [str(puzzle["operands"][0]).replace("None", "?")]
                + [
                    f"{op} {n if n is not None else '?'}"
                    for op, n in zip(puzzle["operators"], puzzle["operands"][1:], strict=True)
                ]
            )
            assert f"\n{template} = {puzzle['result']}\n" in inst.prompt
            assert "\n\nAnswer with the completed equation. " in inst.prompt
            given = [n for n in puzzle["operands"] if n is not None]
            assert given == [
                n for n, p in zip(_numbers(inst.answer), puzzle["operands"], strict=True) if p is not None
            ]
            assert 0 <= puzzle["result"] <= 200
            digits |= set(_numbers(inst.answer))
            results.add(puzzle["result"])
    assert digits == set(range(1, 10))
    assert len({PATH.generate(3, seed).prompt for seed in range(10)}) > 5  # the seed matters
    assert 0 in results


def test_math_path_results_stay_within_0_to_200_inclusive():
    assert PATH.generate(2, 1423).puzzle["result"] == 200  # the first draw for this seed makes exactly 200
    assert PATH.generate(2, 774).puzzle["result"] <= 200  # and this one's first draw makes 201


def test_math_path_corrupt_changes_one_blank_into_a_wrong_equation():
    for difficulty in PATH.sizes:
        inst = PATH.generate(difficulty, 3)
        outs = {PATH.corrupt(inst, seed) for seed in range(12)}
        assert len(outs) > 1
        for seed in range(12):
            wrong = PATH.corrupt(inst, seed)
            assert wrong == PATH.corrupt(inst, seed)
            reward, details = PATH.score(inst.puzzle, wrong)
            assert reward == 0.0 and details["reason"] == "equation does not hold", wrong
            changed = [
                k
                for k, (a, b) in enumerate(zip(_numbers(wrong), _numbers(inst.answer), strict=True))
                if a != b
            ]
            assert len(changed) == 1 and inst.puzzle["operands"][changed[0]] is None


def _numbers(equation: str) -> list[int]:
    return [int(t) for t in equation.split("=")[0].split() if t.isdigit()]


def test_magic_squares_of_every_size_are_magic():
    for n in range(3, 15):
        assert violations(magic(n)) == [], n


def test_magic_square_violations_name_each_line():
    assert violations([[2, 7, 6], [9, 5, 1], [4, 3, 8]]) == []
    assert violations([[7, 2, 6], [9, 5, 1], [4, 3, 8]]) == [
        "column 1 sums to 20, not 15",
        "column 2 sums to 10, not 15",
        "main diagonal sums to 20, not 15",
    ]
    assert violations([[1, 2, 3], [4, 5, 6], [7, 8, 8]]) == [
        "the numbers are not exactly 1..9",
        "row 1 sums to 6, not 15",
        "row 3 sums to 23, not 15",
        "column 1 sums to 12, not 15",
        "column 3 sums to 17, not 15",
        "main diagonal sums to 14, not 15",
    ]
    grid = [[5, 2, 8], [7, 5, 3], [3, 8, 4]]
    assert "anti-diagonal sums to 16, not 15" in violations(grid)


def _orbit(grid: list[list[int]]) -> set:
    n, seen, todo = len(grid), set(), [grid]
    while todo:
        g = todo.pop()
        key = tuple(map(tuple, g))
        if key in seen:
            continue
        seen.add(key)
        todo += [
            [list(r) for r in zip(*g[::-1], strict=True)],
            [r[::-1] for r in g],
            [[n * n + 1 - v for v in r] for r in g],
        ]
        for i in range(n // 2):
            h = [list(r) for r in g]
            h[i], h[n - 1 - i] = h[n - 1 - i], h[i]
            for row in h:
                row[i], row[n - 1 - i] = row[n - 1 - i], row[i]
            todo.append(h)
    return seen


@pytest.mark.parametrize("n", [3, 4, 6])
def test_shuffled_reaches_every_symmetric_square(n):
    base = magic(n)
    seen = {tuple(map(tuple, shuffled(random.Random(s), [list(r) for r in base]))) for s in range(1500)}
    assert seen == _orbit(base)
    assert all(violations([list(r) for r in g]) == [] for g in seen)


def test_magic_square_scoring_records():
    puzzle = {"n": 3, "givens": [[2, 0, 0], [0, 0, 0], [0, 0, 8]]}
    assert MAGIC.score(puzzle, "2 7 6\n9 5 1\n4 3 8") == (1.0, {"correct": True})
    assert MAGIC.score(puzzle, "2 9 4\n7 5 3\n6 1 8") == (1.0, {"correct": True})  # another completion
    assert MAGIC.score(puzzle, "8 3 4\n1 5 9\n6 7 2") == (
        0.0,
        {"correct": False, "wrong_cells": [[1, 1], [3, 3]], "violations": ["given cells changed"]},
    )
    puzzle = {"n": 3, "givens": [[0, 0, 0], [0, 0, 0], [0, 3, 0]]}
    assert MAGIC.score(puzzle, "2 7 6\n9 5 1\n4 3 8") == (1.0, {"correct": True})
    assert MAGIC.score(puzzle, "2 9 4\n7 5 3\n6 1 8")[1]["wrong_cells"] == [[3, 2]]
    assert MAGIC.verify(puzzle, "<answer>2 7 6\n9 5</answer>")[1]["error"].startswith("parse error")


def test_magic_square_generated_puzzles_and_corruptions():
    assert len({MAGIC.generate(3, seed).prompt for seed in range(10)}) > 5  # the seed matters
    for difficulty, (n, k) in {1: (3, 4), 3: (4, 8), 6: (6, 16)}.items():
        for seed in range(6):
            inst = MAGIC.generate(difficulty, seed)
            assert inst == MAGIC.generate(difficulty, seed)
            givens, target = inst.puzzle["givens"], n * (n * n + 1) // 2
            assert MAGIC.score(inst.puzzle, inst.answer) == (1.0, {"correct": True})
            assert sum(v != 0 for row in givens for v in row) == k
            assert MAGIC.measure(inst.puzzle) == n * n - k
            assert f"1-{n * n} exactly once" in inst.prompt and f"sum to {target}.\n" in inst.prompt
            shown = [line.split() for line in inst.prompt.split("\n\n")[1].splitlines()]
            assert shown == [[str(v) if v else "." for v in row] for row in givens]
            answer = [[int(t) for t in line.split()] for line in inst.answer.splitlines()]
            assert all(v == 0 or v == answer[r][c] for r, row in enumerate(givens) for c, v in enumerate(row))
            for cseed in range(n * n):
                wrong = [[int(t) for t in line.split()] for line in MAGIC.corrupt(inst, cseed).splitlines()]
                reward, details = MAGIC.score(inst.puzzle, MAGIC.corrupt(inst, cseed))
                assert reward == 0.0 and "wrong_cells" not in details
                diff = [(r, c) for r in range(n) for c in range(n) if wrong[r][c] != answer[r][c]]
                assert len(diff) == 1 and givens[diff[0][0]][diff[0][1]] == 0
                assert all(1 <= v <= n * n for row in wrong for v in row)
