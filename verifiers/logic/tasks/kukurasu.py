"""Kukurasu (Kakurasu): shade cells so that each row's shaded cells add up their column numbers to the
row clue and each column's shaded cells add up their row numbers to the column clue. Grids are redrawn
until the solution is unique; after a few draws, cells are revealed instead."""

from __future__ import annotations

import itertools
from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import line_clue_violations
from verifiers.logic.solvers import SatModel

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}


def weighted(line: list[int] | tuple[int, ...]) -> int:
    return sum(i + 1 for i, v in enumerate(line) if v)


class Kukurasu(MarkedCellsTask):
    name = "kukurasu"
    description = "Kakurasu: shade cells so weighted row and column sums match the clues."
    levels = {d: f"{n}x{n} grid" for d, n in SIZES.items()}
    mark = "shaded"

    def draw(self, rng, difficulty: int) -> dict[str, Any]:
        n = SIZES[difficulty]
        sol = [[int(rng.random() < 0.5) for _ in range(n)] for _ in range(n)]
        return {
            "rows": n,
            "cols": n,
            "row_sums": [weighted(row) for row in sol],
            "col_sums": [weighted([row[c] for row in sol]) for c in range(n)],
            "given": [],
            "solution": sol,
        }

    def generate(self, difficulty: int, seed: int):
        puzzle = self.settled(self.rng(difficulty, seed), difficulty)
        n = puzzle["rows"]
        prompt = (
            f"Kukurasu puzzle on a {n}x{n} grid. Shade some cells. In each row, the shaded cells' column "
            f"numbers (1-{n}, left to right) must add up to the row's clue; in each column, the shaded cells' "
            f"row numbers (1-{n}, top to bottom) must add up to the column's clue.\n\n"
            f"Row clues (rows 1-{n}): {' '.join(map(str, puzzle['row_sums']))}\n"
            f"Column clues (columns 1-{n}): {' '.join(map(str, puzzle['col_sums']))}\n"
            f"{self.given_text(puzzle)}\n" + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n = puzzle["rows"]
        m = SatModel()
        cells = {(r, c): m.var("b", r, c) for r in range(n) for c in range(n)}
        patterns = list(itertools.product((0, 1), repeat=n))
        lines = [([(i, c) for c in range(n)], puzzle["row_sums"][i]) for i in range(n)]
        lines += [([(r, i) for r in range(n)], puzzle["col_sums"][i]) for i in range(n)]
        for line, target in lines:
            columns = [{0: -cells[cell], 1: cells[cell]} for cell in line]
            m.table(columns, [p for p in patterns if weighted(p) == target])
        return m, cells, self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n = puzzle["rows"]
        clues = [*puzzle["row_sums"], *puzzle["col_sums"]]
        out = line_clue_violations(grid, clues, weighted, "{line} sums to {got}, clue {want}")
        return out[: 2 * n]

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["given"])


TASK = Kukurasu()
