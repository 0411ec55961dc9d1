"""Knights and knaves, Boolean expressions and Boolean SAT: the answer forms a user may write are read,
and each kind of wrong or incomplete answer gets its exact verdict."""

from __future__ import annotations

import pytest

from verifiers.logic.base import ParseError
from verifiers.logic.tasks.boolean_expressions import TASK as BOOLEXPR
from verifiers.logic.tasks.boolean_sat import TASK as SAT
from verifiers.logic.tasks.knights_knaves import TASK as KK

ISLAND = {"names": ["Uma", "Emma", "Frank"], "statements": [], "knights": [True, False, True]}


@pytest.mark.parametrize(
    "answer",
    [
        "Uma is a knight and Emma is a knave and Frank is a knight",
        "Uma:\nknight\nEmma:\nknave\nFrank:\nknight",
        "Uma is\na knight, Emma is\na knave, Frank is\na knight",
    ],
)
def test_knights_knaves_reads_and_joined_and_multi_line_statements(answer):
    assert KK.score(ISLAND, answer) == (1.0, {"correct": True})


def test_knights_knaves_unclassified_inhabitant_is_wrong():
    assert KK.score(ISLAND, "Uma is a knight, Emma is a knave") == (
        0.0,
        {"correct": False, "reason": "inhabitant not classified", "name": "Frank"},
    )


def test_knights_knaves_stray_text_between_statements_is_a_parse_error():
    with pytest.raises(ParseError, match="unexpected 'X'"):
        KK.score(ISLAND, "Uma is a knight X Emma is a knave X Frank is a knight")


EXPRS = {"expressions": [], "labels": ["A", "B", "C", "D"], "true": ["A", "C"], "operators": 3}


@pytest.mark.parametrize("difficulty", [1, 2])
def test_boolean_expressions_items_mix_true_and_false_expressions(difficulty):
    for seed in range(30):
        puzzle = BOOLEXPR.generate(difficulty, seed).puzzle
        assert 0 < len(puzzle["true"]) < len(puzzle["labels"]), seed


def test_boolean_expressions_reads_letters_joined_by_and():
    assert BOOLEXPR.score(EXPRS, "A and C") == (1.0, {"correct": True})
    assert BOOLEXPR.score(EXPRS, "A, B AND C") == (
        0.0,
        {"correct": False, "missing": [], "wrongly_included": ["B"]},
    )


def test_boolean_expressions_naming_every_label_is_wrong_not_unparseable():
    assert BOOLEXPR.score(EXPRS, "A, B, C, D") == (
        0.0,
        {"correct": False, "missing": [], "wrongly_included": ["B", "D"]},
    )


def test_boolean_sat_missing_variable_verdict():
    puzzle = {"n_vars": 3, "clauses": [[1, 2, 3]]}
    assert SAT.score(puzzle, "x1=True, x2=False") == (
        0.0,
        {"correct": False, "reason": "variables without a value", "missing": ["x3"]},
    )
