"""Norinori: shade exactly two cells in every region so that every shaded cell has exactly one shaded
orthogonal neighbour (shaded cells form separate dominoes). Regions grow around random dominoes; layouts
are redrawn until the solution is unique, then cells are revealed if needed."""

from __future__ import annotations

import random
import string
from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import neighbours, random_regions, render
from verifiers.logic.solvers import SatModel

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}


def random_dominoes(rng: random.Random, n: int) -> list[list[tuple[int, int]]]:
    """Non-touching dominoes placed at random (about 70% of the places that fit)."""
    shaded: set[tuple[int, int]] = set()
    dominoes = []
    cells = [(r, c) for r in range(n) for c in range(n)]
    rng.shuffle(cells)

    def free(cell: tuple[int, int], partner: tuple[int, int]) -> bool:
        return cell not in shaded and all(nb == partner or nb not in shaded for nb in neighbours(*cell, n, n))

    for cell in cells:
        if rng.random() > 0.7:
            continue
        options = [nb for nb in neighbours(*cell, n, n) if free(cell, nb) and free(nb, cell)]
        if options:
            other = rng.choice(options)
            dominoes.append([cell, other])
            shaded |= {cell, other}
    return dominoes


class Norinori(MarkedCellsTask):
    name = "norinori"
    description = "Shade two cells per region so that shaded cells form non-touching dominoes."
    levels = {d: f"{n}x{n} grid" for d, n in SIZES.items()}
    mark = "shaded"

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        n = SIZES[difficulty]
        dominoes = random_dominoes(rng, n)
        sol = [[0] * n for _ in range(n)]
        for domino in dominoes:
            for r, c in domino:
                sol[r][c] = 1
        regions = random_regions(rng, n, n, dominoes)
        return {"rows": n, "cols": n, "regions": regions, "given": [], "solution": sol}

    def generate(self, difficulty: int, seed: int):
        puzzle = self.settled(self.rng(difficulty, seed), difficulty)
        n = puzzle["rows"]
        names = string.ascii_uppercase + string.ascii_lowercase
        layout = render([[names[v] for v in row] for row in puzzle["regions"]])
        prompt = (
            f"Norinori on a {n}x{n} grid divided into regions (letters):\n\n{layout}\n\n"
            "Shade cells so that every region contains exactly 2 shaded cells and every shaded cell has "
            "exactly one shaded neighbour (up, down, left or right): the shaded cells form dominoes that do "
            f"not touch each other along an edge.\n{self.given_text(puzzle)}" + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n, regions = puzzle["rows"], puzzle["regions"]
        m = SatModel()
        cells = {(r, c): m.var("b", r, c) for r in range(n) for c in range(n)}
        for i in range(max(map(max, regions)) + 1):
            m.exactly([lit for (r, c), lit in cells.items() if regions[r][c] == i], 2)
        for (r, c), lit in cells.items():
            nbs = [cells[nb] for nb in neighbours(r, c, n, n)]
            m.add([-lit, *nbs])
            for i, a in enumerate(nbs):
                for b in nbs[i + 1 :]:
                    m.add([-lit, -a, -b])
        return m, cells, self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n, regions = puzzle["rows"], puzzle["regions"]
        out = []
        for i in range(max(map(max, regions)) + 1):
            got = sum(grid[r][c] for r in range(n) for c in range(n) if regions[r][c] == i)
            if got != 2:
                out.append(f"a region has {got} shaded cells")
        for r in range(n):
            for c in range(n):
                if grid[r][c] and sum(grid[a][b] for a, b in neighbours(r, c, n, n)) != 1:
                    out.append(f"shaded cell ({r + 1}, {c + 1}) is not part of exactly one domino")
        return out

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["given"])


TASK = Norinori()
