"""Hitori: shade cells so no number repeats among the unshaded cells of a row or column, shaded cells
never share an edge, and the unshaded cells stay connected. Connectivity is enforced lazily: a SAT model
that cuts the unshaded cells apart gets a clause forbidding that cut (see SatSession.check)."""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import neighbours, render, touching_pairs
from verifiers.logic.latin import random_latin
from verifiers.logic.solvers import SatModel

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}


def components(open_cells: set[tuple[int, int]], n: int) -> list[set[tuple[int, int]]]:
    """Orthogonally connected groups of the given cells, largest first."""
    left, out = set(open_cells), []
    while left:
        start = left.pop()
        group, queue = {start}, deque([start])
        while queue:
            for nb in neighbours(*queue.popleft(), n, n):
                if nb in left:
                    left.remove(nb)
                    group.add(nb)
                    queue.append(nb)
        out.append(group)
    return sorted(out, key=len, reverse=True)


def random_shading(rng: random.Random, n: int) -> set[tuple[int, int]]:
    shaded: set[tuple[int, int]] = set()
    cells = [(r, c) for r in range(n) for c in range(n)]
    rng.shuffle(cells)
    for cell in cells:
        if rng.random() < 0.55 and not any(nb in shaded for nb in neighbours(*cell, n, n)):
            rest = {x for x in cells if x not in shaded and x != cell}
            if len(components(rest, n)) == 1:
                shaded.add(cell)
    return shaded


class Hitori(MarkedCellsTask):
    name = "hitori"
    description = "Hitori: shade repeated numbers away; shaded cells apart, unshaded cells connected."
    levels = {d: f"{n}x{n} grid" for d, n in SIZES.items()}
    mark = "shaded"

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        n = SIZES[difficulty]
        numbers = random_latin(rng, n)
        shaded = random_shading(rng, n)
        for r, c in shaded:  # a shaded cell repeats a number that stays visible in its row or column
            seen = [numbers[r][j] for j in range(n) if (r, j) not in shaded]
            seen += [numbers[i][c] for i in range(n) if (i, c) not in shaded]
            numbers[r][c] = rng.choice(seen)
        sol = [[int((r, c) in shaded) for c in range(n)] for r in range(n)]
        return {"rows": n, "cols": n, "numbers": numbers, "given": [], "solution": sol}

    def generate(self, difficulty: int, seed: int):
        puzzle = self.settled(self.rng(difficulty, seed), difficulty)
        n = puzzle["rows"]
        prompt = (
            f"Hitori on a {n}x{n} grid:\n\n{render(puzzle['numbers'])}\n\n"
            "Shade some cells so that: no number appears more than once among the unshaded cells of any row "
            "or column; shaded cells never share an edge; all unshaded cells form one group connected through "
            f"edges.\n{self.given_text(puzzle)}" + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n, numbers = puzzle["rows"], puzzle["numbers"]
        m = SatModel()
        cells = {(r, c): m.var("s", r, c) for r in range(n) for c in range(n)}
        lines = [[(i, j) for j in range(n)] for i in range(n)] + [
            [(j, i) for j in range(n)] for i in range(n)
        ]
        for line in lines:
            for k, a in enumerate(line):
                for b in line[k + 1 :]:
                    if numbers[a[0]][a[1]] == numbers[b[0]][b[1]]:
                        m.add([cells[a], cells[b]])
        for cell, lit in cells.items():
            for nb in neighbours(*cell, n, n):
                if nb > cell:
                    m.add([-lit, -cells[nb]])
        return m, cells, self.given_literals(puzzle, cells)

    def lazy_check(self, puzzle: dict[str, Any], cells):
        n = puzzle["rows"]

        def check(true: set[int]) -> list[list[int]]:
            open_cells = {cell for cell, lit in cells.items() if lit not in true}
            groups = components(open_cells, n)
            cuts = []
            for group in groups[1:]:  # this group must not be walled off by exactly these shaded cells
                wall = {nb for cell in group for nb in neighbours(*cell, n, n) if nb not in group}
                cuts.append([*(cells[c] for c in group), *(-cells[w] for w in wall)])
            return cuts

        return check

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n, numbers = puzzle["rows"], puzzle["numbers"]
        out = []
        for i in range(n):
            row = [numbers[i][j] for j in range(n) if not grid[i][j]]
            col = [numbers[j][i] for j in range(n) if not grid[j][i]]
            if len(set(row)) < len(row):
                out.append(f"row {i + 1} repeats an unshaded number")
            if len(set(col)) < len(col):
                out.append(f"column {i + 1} repeats an unshaded number")
        out += [
            f"shaded cells ({r + 1}, {c + 1}) and ({a + 1}, {b + 1}) share an edge"
            for (r, c), (a, b) in touching_pairs(grid)
        ]
        open_cells = {(r, c) for r in range(n) for c in range(n) if not grid[r][c]}
        if len(components(open_cells, n)) > 1:
            out.append("the unshaded cells are not connected")
        return out

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["given"])


TASK = Hitori()
