"""Star Battle: place stars so each row, column and region holds exactly k, no two touching (not even
diagonally). Regions are grown around a random valid star layout; layouts are redrawn until the solver
proves the solution unique, and after a few draws the remaining ambiguity is settled by revealed stars."""

from __future__ import annotations

import random
import string
from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import (
    KING,
    line_clue_violations,
    neighbours,
    random_regions,
    random_row_placement,
    render,
    touching_pairs,
)
from verifiers.logic.solvers import SatModel

# level -> (size, stars per row/column/region); the rules and checker take any k, the generator draws k=1
LEVELS = {1: (5, 1), 2: (6, 1), 3: (7, 1), 4: (8, 1), 5: (9, 1), 6: (10, 1)}


def random_stars(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """One star per row and column, none touching: randomised backtracking row by row."""
    cols = random_row_placement(rng, n, lambda cols, c: c not in cols and (not cols or abs(cols[-1] - c) > 1))
    return list(enumerate(cols))


class StarPlacement(MarkedCellsTask):
    name = "star_placement"
    description = "Star Battle: k stars in every row, column and region, no two stars touching."
    levels = {d: f"{n}x{n} grid, {n} regions, {k} star(s) each" for d, (n, k) in LEVELS.items()}
    answer_style = "coords"
    mark = "star"

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        n, k = LEVELS[difficulty]
        stars = random_stars(rng, n)
        sol: Grid = [[0] * n for _ in range(n)]
        for r, c in stars:
            sol[r][c] = 1
        regions = random_regions(rng, n, n, [[star] for star in stars])
        return {"rows": n, "cols": n, "k": k, "regions": regions, "given": [], "solution": sol}

    def generate(self, difficulty: int, seed: int):
        puzzle = self.settled(self.rng(difficulty, seed), difficulty)
        n, k = puzzle["rows"], puzzle["k"]
        layout = render([[string.ascii_uppercase[v] for v in row] for row in puzzle["regions"]])
        prompt = (
            f"Star Battle on a {n}x{n} grid divided into {n} regions (letters):\n\n{layout}\n\n"
            f"Place stars so that every row, every column and every region contains exactly {k} star(s), and "
            f"no two stars touch each other, not even diagonally.\n{self.given_text(puzzle)}"
            + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n, k, regions = puzzle["rows"], puzzle["k"], puzzle["regions"]
        m = SatModel()
        cells = {(r, c): m.var("s", r, c) for r in range(n) for c in range(n)}
        for i in range(n):
            m.exactly([cells[i, c] for c in range(n)], k)
            m.exactly([cells[r, i] for r in range(n)], k)
            m.exactly([cells[r, c] for (r, c) in cells if regions[r][c] == i], k)
        for (r, c), lit in cells.items():
            for nb in neighbours(r, c, n, n, KING):
                if nb > (r, c):
                    m.add([-lit, -cells[nb]])
        return m, cells, self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n, k, regions = puzzle["rows"], puzzle["k"], puzzle["regions"]
        out = line_clue_violations(grid, [k] * (2 * n), sum, "{line} has {got} stars")
        for i in range(n):
            got = sum(grid[r][c] for r in range(n) for c in range(n) if regions[r][c] == i)
            if got != k:
                out.append(f"region {string.ascii_uppercase[i]} has {got} stars")
        out += [
            f"stars at ({r + 1}, {c + 1}) and ({a + 1}, {b + 1}) touch"
            for (r, c), (a, b) in touching_pairs(grid, KING)
        ]
        return out

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] ** 2 - len(puzzle["given"])


TASK = StarPlacement()
