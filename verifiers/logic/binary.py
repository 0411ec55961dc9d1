"""Shared machinery for puzzles whose answer is a set of marked cells (stars, tents, lights, mines,
shaded cells): answer parsing in either grid or coordinate form, rule-based scoring, the one-cell
corruption, and solution counting through the task's SAT model.

A task subclass provides `build` (its rules as CNF over one literal per cell) and `violations` (the same
rules checked directly on a grid, which is what scores answers); the tests check that the two agree on
every generated instance: the gold grid has no violations and is the SAT model's only solution.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.grids import (
    diff_cells,
    grid_result,
    parse_binary_grid,
    parse_coords,
    render,
    render_cells,
)
from verifiers.logic.solvers import Lit, SatModel

Grid = list[list[int]]


class MarkedCellsTask(LogicTask):
    """Puzzle dicts hold "rows", "cols", the unique "solution" grid (1 = marked) and "given": revealed
    cells as [row, col, 0/1] (0-based) that the answer must keep."""

    answer_style: str = "grid"  # or "coords": a list of 1-based (row, column) pairs
    mark: str = "marked"  # what a 1 means, for the answer-format sentence

    @abstractmethod
    def build(self, puzzle: dict[str, Any]) -> tuple[SatModel, dict[tuple[int, int], Lit], list[Lit]]:
        """(model, literal per cell that may be marked, assumption literals for the puzzle's clues)."""

    @abstractmethod
    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        """Every rule the grid breaks (empty when it is a valid solution)."""

    def answer_format(self, puzzle: dict[str, Any]) -> str:
        rows, cols = puzzle["rows"], puzzle["cols"]
        if self.answer_style == "coords":
            return (
                f"Answer with the (row, column) positions of every {self.mark} cell, rows and columns numbered "
                "from 1 at the top-left, e.g. (1, 2), (3, 4). " + ANSWER_FORMAT
            )
        return (
            f"Answer with a {rows}x{cols} grid of 0/1 ({rows} lines of {cols} digits separated by spaces), "
            f"1 for a {self.mark} cell and 0 otherwise. " + ANSWER_FORMAT
        )

    def instance(self, difficulty: int, seed: int, prompt: str, puzzle: dict[str, Any]) -> LogicInstance:
        return LogicInstance(
            self.name, difficulty, seed, prompt, self.render_answer(puzzle["solution"]), puzzle
        )

    def render_answer(self, grid: Grid) -> str:
        if self.answer_style == "coords":
            return render_cells(
                [[r + 1, c + 1] for r, row in enumerate(grid) for c, v in enumerate(row) if v]
            )
        return render(grid)

    def parse(self, puzzle: dict[str, Any], answer: str) -> Grid:
        rows, cols = puzzle["rows"], puzzle["cols"]
        if self.answer_style == "grid":
            return parse_binary_grid(answer, rows, cols)
        grid = [[0] * cols for _ in range(rows)]
        cells = parse_coords(answer)
        if not cells:
            raise ParseError("no (row, column) pairs found")
        for r, c in cells:
            if not (1 <= r <= rows and 1 <= c <= cols):
                raise ParseError(f"({r}, {c}) is outside the {rows}x{cols} grid")
            grid[r - 1][c - 1] = 1
        return grid

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        grid = self.parse(puzzle, answer)
        broken = self.violations(puzzle, grid)
        broken += [
            f"revealed cell ({r + 1}, {c + 1}) changed" for r, c, on in puzzle["given"] if grid[r][c] != on
        ]
        return grid_result(diff_cells(grid, puzzle["solution"]) if broken else [], broken)

    def given_literals(self, puzzle: dict[str, Any], cells: dict[tuple[int, int], Lit]) -> list[Lit]:
        return [cells[r, c] if on else -cells[r, c] for r, c, on in puzzle["given"]]

    def given_text(self, puzzle: dict[str, Any]) -> str:
        if not puzzle["given"]:
            return ""
        marked = render_cells([[r + 1, c + 1] for r, c, on in sorted(puzzle["given"]) if on]) or "none"
        clear = render_cells([[r + 1, c + 1] for r, c, on in sorted(puzzle["given"]) if not on]) or "none"
        return f"\nAlready known: {self.mark} cells {marked}; cells that are not {self.mark}: {clear}.\n"

    draws: int = 10  # random layouts tried per instance

    def draw(self, rng, difficulty: int) -> dict[str, Any]:
        """A random puzzle (with its intended "solution" and no "given" cells) at this difficulty."""
        raise NotImplementedError(f"{self.name} generates its puzzles without draw()")

    def settled(self, rng, difficulty: int) -> dict[str, Any]:
        """Draw puzzles until one has a unique solution. When none of `draws` does, keep the one that
        needs the fewest revealed cells to become unique, and reveal those (puzzle["given"])."""
        best: tuple[dict[str, Any], list[list[int]]] | None = None
        for _ in range(self.draws):
            puzzle = self.draw(rng, difficulty)
            reveal = self.reveals_needed(puzzle, rng)
            if best is None or len(reveal) < len(best[1]):
                best = (puzzle, reveal)
            if not reveal:
                break
        puzzle, reveal = best
        puzzle["given"] = [*puzzle["given"], *reveal]
        return puzzle

    def reveals_needed(self, puzzle: dict[str, Any], rng) -> list[list[int]]:
        """Cells of the intended solution, as [row, col, 0/1], whose revealing makes it the only one."""
        model, cells, assumptions = self.build(puzzle)
        with model.session(self.lazy_check(puzzle, cells)) as s:
            pinned = s.pin_until_unique(
                list(cells.values()), self.true_of(puzzle["solution"], cells), rng, assumptions
            )
        lookup = {lit: cell for cell, lit in cells.items()}
        return [[*lookup[abs(p)], int(p > 0)] for p in pinned]

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        grid = [row[:] for row in instance.puzzle["solution"]]
        cells = self.free_cells(instance.puzzle)
        r, c = cells[seed % len(cells)]
        grid[r][c] ^= 1
        return self.render_answer(grid)

    def free_cells(self, puzzle: dict[str, Any]) -> list[tuple[int, int]]:
        """Cells a near-miss answer may flip (defaults to every cell not revealed)."""
        known = {(r, c) for r, c, _ in puzzle["given"]}
        return [(r, c) for r in range(puzzle["rows"]) for c in range(puzzle["cols"]) if (r, c) not in known]

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        model, cells, assumptions = self.build(puzzle)
        with model.session(self.lazy_check(puzzle, cells)) as s:
            return s.count(list(cells.values()), assumptions, limit)

    def lazy_check(self, puzzle: dict[str, Any], cells: dict[tuple[int, int], Lit]):
        """Rules added lazily during search (see SatSession.check); None when the CNF says everything."""
        return None

    @staticmethod
    def grid_of(true: set[int], cells: dict[tuple[int, int], Lit], rows: int, cols: int) -> Grid:
        grid = [[0] * cols for _ in range(rows)]
        for (r, c), lit in cells.items():
            grid[r][c] = int(lit in true)
        return grid

    @staticmethod
    def true_of(grid: Grid, cells: dict[tuple[int, int], Lit]) -> set[int]:
        return {lit for (r, c), lit in cells.items() if grid[r][c]}
