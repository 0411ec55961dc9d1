"""Shared machinery for fill-in number grids (sudoku, latin square, futoshiki, skyscraper, numbrix,
survo): the answer is the completed grid, the puzzle dict holds ``givens`` (0 = blank) and the unique
``solution``, and each task only states its own rules in `violations`."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from verifiers.logic.base import LogicInstance, LogicTask
from verifiers.logic.grids import diff_cells, grid_result, parse_int_grid, render

Grid = list[list[int]]


class FillInTask(LogicTask):
    @abstractmethod
    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        """Every rule of the puzzle that the filled grid breaks (givens are checked here already)."""

    def largest(self, puzzle: dict[str, Any]) -> int:
        """The largest number a cell may hold (the side length unless a task says otherwise)."""
        return len(puzzle["givens"])

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        givens = puzzle["givens"]
        grid = parse_int_grid(answer, len(givens), len(givens[0]))
        broken = self.violations(puzzle, grid)
        broken += [
            f"given ({r + 1},{c + 1})={v} changed"
            for r, row in enumerate(givens)
            for c, v in enumerate(row)
            if v and grid[r][c] != v
        ]
        return grid_result(diff_cells(grid, puzzle["solution"]) if broken else [], broken)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return sum(v == 0 for row in puzzle["givens"] for v in row)

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        p = instance.puzzle
        grid = [row[:] for row in p["solution"]]
        blanks = [(r, c) for r, row in enumerate(p["givens"]) for c, v in enumerate(row) if not v]
        r, c = blanks[seed % len(blanks)]
        grid[r][c] = grid[r][c] % self.largest(p) + 1
        return render(grid)


def givens_of(solution: Grid, cells: Sequence[tuple[int, int]], kept: Sequence[int]) -> Grid:
    """The solution with every cell blanked (0) except cells[i] for i in kept."""
    givens = [[0] * len(row) for row in solution]
    for i in kept:
        r, c = cells[i]
        givens[r][c] = solution[r][c]
    return givens


def show(givens: Grid) -> str:
    """The grid as the prompt shows it: '.' for blanks, columns aligned."""
    width = max(len(str(v)) for row in givens for v in row)
    return render([[(str(v) if v else ".").rjust(width) for v in row] for row in givens])
