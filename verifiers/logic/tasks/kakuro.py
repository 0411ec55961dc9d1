"""Kakuro: write digits 1-9 in the white cells so that each across and down run (two or more white cells
between black cells) has distinct digits adding up to its clue. Layouts and fillings are random; where
the SAT solver finds a second filling, one differing cell is given, until the solution is unique."""

from __future__ import annotations

import itertools
import random
from functools import cache
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.grids import diff_cells, grid_result, parse_grid, render
from verifiers.logic.solvers import SatModel

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}  # grid side, including the clue row and column
DIGITS = range(1, 10)
DRAWS = 4  # layouts tried per instance; the one needing the fewest given digits is kept
Cell = tuple[int, int]


@cache
def combos(length: int, total: int) -> list[tuple[int, ...]]:
    return [c for c in itertools.combinations(DIGITS, length) if sum(c) == total]


def runs(white: set[Cell], n: int) -> list[list[Cell]]:
    """Maximal horizontal and vertical runs of white cells (length >= 1)."""
    out = []
    for line in [[(r, c) for c in range(n)] for r in range(n)] + [
        [(r, c) for r in range(n)] for c in range(n)
    ]:
        current: list[Cell] = []
        for cell in [*line, None]:
            if cell in white:
                current.append(cell)
            else:
                if current:
                    out.append(current)
                current = []
    return out


def random_layout(rng: random.Random, n: int) -> set[Cell]:
    """White cells of the interior (row/column 0 hold clues); no run shorter than two cells."""
    white = {(r, c) for r in range(1, n) for c in range(1, n) if rng.random() > 0.22}
    while short := [cell for run in runs(white, n) if len(run) == 1 for cell in run]:
        white -= set(short)
    return white


def _model(white: set[Cell], clues: list[tuple[list[Cell], int]] | None):
    """Digits with distinct values per run; with clues, each run's digit set is one of its combos."""
    m = SatModel()
    x = {cell: m.one_hot(("x", cell), DIGITS) for cell in sorted(white)}
    for run in runs(white, max(max(c) for c in white) + 1):
        for d in DIGITS:
            m.at_most([x[cell][d] for cell in run], 1)
    for run, total in clues or []:
        choices = []
        for combo in combos(len(run), total):
            choices.append(s := m.fresh())
            for cell in run:
                m.add([-s, *(x[cell][d] for d in combo)])
        m.add(choices)
    return m, x


class Kakuro(LogicTask):
    name = "kakuro"
    description = "Kakuro: fill white cells with 1-9, distinct within each run, runs adding up to clues."
    levels = {d: f"{n}x{n} grid including the clue row and column" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        puzzle = min((self._draw(rng, n) for _ in range(DRAWS)), key=lambda p: len(p["given"]))
        return LogicInstance(
            self.name, difficulty, seed, self._prompt(puzzle), render(puzzle["solution"]), puzzle
        )

    def _draw(self, rng: random.Random, n: int) -> dict[str, Any]:
        """A random layout and filling, with the cells that must be given to make the filling unique."""
        while len(white := random_layout(rng, n)) < (n - 1) ** 2 // 2:
            pass
        model, x = _model(white, None)
        over = [lit for cell in sorted(x) for lit in x[cell].values()]
        with model.session() as s:
            true = s.random_solution(over, rng)
        sol = {cell: next(d for d, lit in x[cell].items() if lit in true) for cell in x}
        clues = [(run, sum(sol[cell] for cell in run)) for run in runs(white, n)]
        model, x = _model(white, clues)
        given: list[Cell] = []
        with model.session() as s:
            guard = s.differs_from(over, true)
            while (rival := s.rival(guard, over, [x[cell][sol[cell]] for cell in given])) is not None:
                given.append(rng.choice([cell for cell in sorted(x) if x[cell][sol[cell]] not in rival]))
        return {
            "n": n,
            "white": sorted([list(cell) for cell in white]),
            "runs": [{"cells": [list(cell) for cell in run], "sum": total} for run, total in clues],
            "given": sorted([[r, c, sol[r, c]] for r, c in given]),
            "solution": [
                ["#" if (r, c) not in white else str(sol[r, c]) for c in range(n)] for r in range(n)
            ],
        }

    def _prompt(self, p: dict[str, Any]) -> str:
        n = p["n"]
        board = [["#"] * n for _ in range(n)]
        for r, c in p["white"]:
            board[r][c] = "."
        for r, c, d in p["given"]:
            board[r][c] = str(d)
        lines = []
        for run in p["runs"]:
            (r0, c0), (r1, c1) = run["cells"][0], run["cells"][-1]
            where = (
                f"row {r0 + 1}, columns {c0 + 1}-{c1 + 1}"
                if r0 == r1
                else f"column {c0 + 1}, rows {r0 + 1}-{r1 + 1}"
            )
            lines.append(f"{'across' if r0 == r1 else 'down'} {where}: sum {run['sum']}")
        return (
            f"Kakuro on a {n}x{n} grid ('#' black, '.' white, digits given):\n\n{render(board)}\n\n"
            "Write a digit 1-9 in every white cell. Each run of white cells listed below must contain distinct "
            "digits that add up to its sum. Rows and columns are numbered from 1.\n"
            + "\n".join(lines)
            + "\n\n"
            f"Answer with the completed grid: {n} lines of {n} entries separated by spaces, a digit for each "
            "white cell and # for each black cell. " + ANSWER_FORMAT
        )

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n"]
        grid = parse_grid(answer, n, n, r"\d|#")
        white = {tuple(cell) for cell in puzzle["white"]}
        broken = [
            f"white cell ({r + 1},{c + 1}) has no digit 1-9"
            for r, c in sorted(white)
            if grid[r][c] in ("#", "0")
        ]
        broken += [
            f"black cell ({r + 1},{c + 1}) holds {grid[r][c]}"
            for r in range(n)
            for c in range(n)
            if (r, c) not in white and grid[r][c] != "#"
        ]
        if not broken:
            for run in puzzle["runs"]:
                digits = [int(grid[r][c]) for r, c in run["cells"]]
                (r, c) = run["cells"][0]
                if len(set(digits)) < len(digits):
                    broken.append(f"run at ({r + 1},{c + 1}) repeats a digit")
                if sum(digits) != run["sum"]:
                    broken.append(f"run at ({r + 1},{c + 1}) sums to {sum(digits)}, not {run['sum']}")
            broken += [
                f"given ({r + 1},{c + 1})={d} changed" for r, c, d in puzzle["given"] if grid[r][c] != str(d)
            ]
        return grid_result(diff_cells(grid, puzzle["solution"]) if broken else [], broken)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return len(puzzle["white"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        grid = [row[:] for row in instance.puzzle["solution"]]
        given = {(r, c) for r, c, _ in instance.puzzle["given"]}
        free = [tuple(cell) for cell in instance.puzzle["white"] if tuple(cell) not in given]
        r, c = free[seed % len(free)]
        grid[r][c] = str(int(grid[r][c]) % 9 + 1)
        return render(grid)

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        white = {tuple(cell) for cell in puzzle["white"]}
        clues = [([tuple(cell) for cell in run["cells"]], run["sum"]) for run in puzzle["runs"]]
        model, x = _model(white, clues)
        with model.session() as s:
            over = [lit for cell in sorted(x) for lit in x[cell].values()]
            return s.count(over, [x[r, c][d] for r, c, d in puzzle["given"]], limit)


TASK = Kakuro()
