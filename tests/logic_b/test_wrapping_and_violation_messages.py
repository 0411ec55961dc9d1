"""Wrapped answers are unwrapped, and violation messages name the clue or numbers that are wrong."""

from __future__ import annotations

import re

import pytest

from verifiers.logic.tasks.numbrix import TASK as NUMBRIX
from verifiers.logic.tasks.skyscraper import TASK as SKYSCRAPER
from verifiers.logic.textutil import strip_wrapping


@pytest.mark.parametrize(
    ("text", "inner"),
    [
        ('"7"', "7"),
        ("'7'", "7"),
        ("`a b`", "a b"),
        ("(7)", "7"),
        ("[1, 2]", "1, 2"),
        ("{x}", "x"),
        ("[(3)]", "3"),
        ("[]", ""),
        ('""', ""),
        ("[1, 2", "[1, 2"),
        ('"7', '"7'),
    ],
)
def test_surrounding_quotes_and_brackets_are_removed(text, inner):
    assert strip_wrapping(text) == inner


@pytest.mark.parametrize("seed", range(3))
def test_skyscraper_messages_name_the_clue_that_is_broken(seed):
    puzzle = SKYSCRAPER.generate(2, seed).puzzle
    grid = [list(row) for row in puzzle["solution"]]
    grid[0], grid[1] = grid[1], grid[0]  # still a latin square, but some clues now see other counts
    messages = SKYSCRAPER.violations(puzzle, grid)
    assert messages
    for message in messages:
        side, k, _got, want = re.fullmatch(
            r"(\w+) clue (\d+): (\d+) visible, expected (\d+)", message
        ).groups()
        assert 1 <= int(k) <= puzzle["n"]
        assert puzzle["clues"][side][int(k) - 1] == int(want)


def test_numbrix_messages_name_consecutive_numbers_that_are_apart():
    puzzle = NUMBRIX.generate(1, 0).puzzle
    n = puzzle["n"]
    grid = [list(range(r * n + 1, r * n + n + 1)) for r in range(n)]  # rows left to right: 3 -> 4 jumps
    assert NUMBRIX.violations(puzzle, grid) == [
        f"{r * n + n} and {r * n + n + 1} are not neighbours" for r in range(n - 1)
    ]


def test_zebra_answers_may_be_bulleted_or_a_bracketed_list_of_rows():
    from verifiers.logic.tasks.zebra_puzzle import TASK as ZEBRA

    inst = ZEBRA.generate(1, 0)
    rows = inst.answer.split("\n")  # "House 1: Bob, white", ...
    bulleted = "\n".join(f"- {row}" for row in rows)
    assert ZEBRA.verify(inst.puzzle, f"<answer>{bulleted}</answer>") == (1.0, {"correct": True})
    bare = [row.split(": ", 1)[1] for row in rows]
    listed = "[\n" + ",\n".join(f"  [{row}]" for row in bare) + "\n]"
    assert ZEBRA.verify(inst.puzzle, f"<answer>{listed}</answer>") == (1.0, {"correct": True})
    lower = "\n".join(row.lower() for row in bare)  # one line per house, all lower case
    assert ZEBRA.verify(inst.puzzle, f"<answer>{lower}</answer>") == (1.0, {"correct": True})
