"""Deduction puzzles: uniqueness proved by the solvers, answers accepted in the formats people use."""

from __future__ import annotations

import pytest

from verifiers.logic.tasks.boolean_expressions import TASK as BOOLEXPR
from verifiers.logic.tasks.boolean_sat import TASK as SAT
from verifiers.logic.tasks.knights_knaves import TASK as KK
from verifiers.logic.tasks.knights_knaves import consistent
from verifiers.logic.tasks.web_of_lies import TASK as WOL
from verifiers.logic.tasks.zebra_puzzle import TASK as ZEBRA
from verifiers.logic.tasks.zebra_puzzle import ZebraSolver


@pytest.mark.parametrize("task", [KK, WOL])
def test_truth_puzzles_have_one_consistent_assignment(task):
    for d in task.difficulties:
        for seed in range(5):
            assert task.count_solutions(task.generate(d, seed).puzzle) == 1


def test_knights_and_knaves_semantics():
    # A: "B is a knave."  B: "A and I are of the same kind."  Only A knight, B knave fits.
    statements = [["is", 1, False], ["same", 0, 1]]
    assert consistent(statements, 2) == [(True, False)]


def test_knights_and_knaves_answer_formats():
    inst = KK.generate(2, 4)
    names, knights = inst.puzzle["names"], inst.puzzle["knights"]
    table = "\n".join(f"**{n}**: {'Knight' if k else 'Knave'}" for n, k in zip(names, knights, strict=True))
    assert KK.score(inst.puzzle, table)[0] == 1.0
    partial = "\n".join(table.splitlines()[1:])
    assert KK.score(inst.puzzle, partial)[1] == {
        "correct": False,
        "reason": "inhabitant not classified",
        "name": names[0],
    }


def test_web_of_lies_answer_formats():
    inst = WOL.generate(3, 2)
    loose = inst.answer.upper().replace(", ", ". ") + "."
    assert WOL.score(inst.puzzle, loose)[0] == 1.0
    assert "parse error" in WOL.score(inst.puzzle, "yes")[1]["error"]


@pytest.mark.parametrize("difficulty", [1, 4, 6])
def test_zebra_clues_are_unique_and_minimal(difficulty):
    inst = ZEBRA.generate(difficulty, 11)
    n, m = len(inst.puzzle["houses"]), len(inst.puzzle["attributes"])
    clues = inst.puzzle["clues"]
    assert ZEBRA.count_solutions(inst.puzzle) == 1
    for k in range(len(clues)):  # every clue is needed
        assert len(ZebraSolver(n, m, clues[:k] + clues[k + 1 :]).count()) == 2


def test_zebra_answer_formats_and_wrong_cell():
    inst = ZEBRA.generate(3, 1)
    houses = inst.puzzle["houses"]
    bare_lines = "\n".join(" | ".join(h) for h in houses)
    as_lists = "[" + ", ".join("[" + ", ".join(f'"{v}"' for v in h) + "]" for h in houses) + "]"
    shuffled_within_house = "\n".join(
        f"house {p + 1} - {', '.join(reversed(h))}" for p, h in enumerate(houses)
    )
    for answer in (bare_lines, as_lists, shuffled_within_house, inst.answer.upper()):
        assert ZEBRA.score(inst.puzzle, answer)[0] == 1.0, answer
    swapped = [list(h) for h in houses]
    swapped[0][1], swapped[1][1] = swapped[1][1], swapped[0][1]
    reward, details = ZEBRA.score(inst.puzzle, "\n".join(", ".join(h) for h in swapped))
    assert reward == 0.0 and details["house"] == 1 and details["attribute"] == inst.puzzle["attributes"][1]


def test_sat_accepts_any_satisfying_assignment():
    puzzle = {"n_vars": 3, "clauses": [[1, 2, 3], [-1, -2, 3]]}
    for answer in ("x1=True, x2=False, x3=False", "x1 = 0; x2 = 1; x3 = 0", "x1: T, x2: T, x3: T"):
        assert SAT.score(puzzle, answer)[0] == 1.0, answer
    reward, details = SAT.score(puzzle, "x1=False, x2=False, x3=False")
    assert reward == 0.0 and details["clause"] == 1
    assert SAT.score(puzzle, "x1=True, x3=True")[1]["missing"] == ["x2"]


def test_sat_planted_assignment_is_critical_in_every_variable():
    inst = SAT.generate(4, 2)
    for seed in range(inst.puzzle["n_vars"]):
        assert SAT.score(inst.puzzle, SAT.corrupt(inst, seed))[0] == 0.0


def test_boolean_expression_answer_formats():
    inst = BOOLEXPR.generate(3, 0)
    true = inst.puzzle["true"]
    for answer in ("".join(true), " and ".join(true), ", ".join(x.lower() for x in true)):
        assert BOOLEXPR.score(inst.puzzle, answer)[0] == 1.0, answer
    assert BOOLEXPR.score(inst.puzzle, "none")[1]["missing"] == true
