"""Dyck language errors accept the usual phrases for "no error"; Binairo names the uniqueness rule a
grid breaks (rows vs. columns)."""

from __future__ import annotations

import pytest

from verifiers.logic.tasks.binairo import TASK as BINAIRO
from verifiers.logic.tasks.dyck_language_errors import TASK as DYCK

WELL_NESTED = {"sequence": "([])", "first_error": 0, "length": 4}


@pytest.mark.parametrize("answer", ["none", "None", "well-nested", "well nested", "no error", "valid"])
def test_dyck_errors_accepts_phrases_for_no_error(answer):
    assert DYCK.score(WELL_NESTED, answer) == (1.0, {"correct": True})


def test_dyck_errors_none_is_wrong_when_there_is_an_error():
    assert DYCK.score({"sequence": "(]", "first_error": 2, "length": 2}, "none") == (
        0.0,
        {"correct": False, "expected": 2, "got": 0},
    )


# Every line has three ones and no three equal digits in a row; rows 4 and 6 are equal, columns distinct.
TWIN_ROWS = [
    [0, 0, 1, 1, 0, 1],
    [0, 1, 0, 0, 1, 1],
    [1, 0, 1, 0, 1, 0],
    [1, 1, 0, 1, 0, 0],
    [0, 0, 1, 0, 1, 1],
    [1, 1, 0, 1, 0, 0],
]
TWIN_COLUMNS = [list(col) for col in zip(*TWIN_ROWS, strict=True)]
SIX = {"rows": 6, "cols": 6}


def test_binairo_names_identical_rows():
    assert BINAIRO.violations(SIX, TWIN_ROWS) == ["two rows are identical"]


def test_binairo_names_identical_columns():
    assert BINAIRO.violations(SIX, TWIN_COLUMNS) == ["two columns are identical"]
