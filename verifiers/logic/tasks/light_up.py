"""Light Up (Akari): place lights on white cells so every white cell is lit (lights shine along rows
and columns until a black cell), no light shines on another, and each numbered black cell touches
exactly that many lights. Numbers are removed while the solution stays unique."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import neighbours, render
from verifiers.logic.solvers import SatModel, reduce_clues

SIZES = {1: 5, 2: 6, 3: 7, 4: 8, 5: 9, 6: 10}
RAYS = ((0, 1), (0, -1), (1, 0), (-1, 0))


def seen_from(cell: tuple[int, int], black: set[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    """White cells a light at `cell` reaches (not counting the cell itself)."""
    out = []
    for dr, dc in RAYS:
        r, c = cell[0] + dr, cell[1] + dc
        while 0 <= r < n and 0 <= c < n and (r, c) not in black:
            out.append((r, c))
            r, c = r + dr, c + dc
    return out


class LightUp(MarkedCellsTask):
    name = "light_up"
    description = "Akari: light every white cell; lights never see each other; numbered walls count lights."
    levels = {d: f"{n}x{n} grid" for d, n in SIZES.items()}
    answer_style = "coords"
    mark = "light"

    def draw(self, rng: random.Random, difficulty: int) -> dict[str, Any]:
        """Random black cells, lights placed greedily until all is lit, every black cell numbered."""
        n = SIZES[difficulty]
        black = {(r, c) for r in range(n) for c in range(n) if rng.random() < 0.2}
        lights: set[tuple[int, int]] = set()
        lit: set[tuple[int, int]] = set()
        whites = [(r, c) for r in range(n) for c in range(n) if (r, c) not in black]
        rng.shuffle(whites)
        for cell in whites:
            if cell not in lit:
                lights.add(cell)
                lit |= {cell, *seen_from(cell, black, n)}
        numbers = [[r, c, sum(nb in lights for nb in neighbours(r, c, n, n))] for r, c in sorted(black)]
        sol = [[int((r, c) in lights) for c in range(n)] for r in range(n)]
        return {
            "rows": n,
            "cols": n,
            "black": sorted([list(b) for b in black]),
            "numbers": numbers,
            "given": [],
            "solution": sol,
        }

    def generate(self, difficulty: int, seed: int):
        rng = self.rng(difficulty, seed)
        puzzle = self.settled(rng, difficulty)
        n = puzzle["rows"]
        model, cells, assumptions = self.build(puzzle)
        guards, revealed = assumptions[: len(puzzle["numbers"])], assumptions[len(puzzle["numbers"]) :]
        with model.session() as s:  # then drop the numbers the unique solution does not need
            kept = reduce_clues(s, list(cells.values()), [[g] for g in guards], rng, required=revealed)
        puzzle["numbers"] = [puzzle["numbers"][i] for i in kept]
        board = [["." for _ in range(n)] for _ in range(n)]
        for r, c in puzzle["black"]:
            board[r][c] = "#"
        for r, c, k in puzzle["numbers"]:
            board[r][c] = str(k)
        prompt = (
            f"Light Up (Akari) on a {n}x{n} grid. '.' is a white cell, '#' a black cell, a digit a black cell "
            f"with a number:\n\n{render(board)}\n\n"
            "Place lights on white cells. A light illuminates its own cell and every white cell in its row and "
            "column until a black cell blocks it. Every white cell must be illuminated, no light may "
            "illuminate another light, and a numbered black cell must have exactly that many lights directly "
            f"above, below, left and right of it.\n{self.given_text(puzzle)}" + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        """Number clues come first among the assumptions (one guard each), revealed cells after them."""
        n = puzzle["rows"]
        black = {tuple(b) for b in puzzle["black"]}
        m = SatModel()
        cells = {(r, c): m.var("L", r, c) for r in range(n) for c in range(n) if (r, c) not in black}
        for cell, lit in cells.items():
            seen = seen_from(cell, black, n)
            m.add([lit, *(cells[x] for x in seen)])
            for x in seen:
                if x > cell:
                    m.add([-lit, -cells[x]])
        guards = []
        for r, c, k in puzzle["numbers"]:
            guards.append(g := m.fresh())
            m.exactly([cells[nb] for nb in neighbours(r, c, n, n) if nb in cells], k, guard=g)
        return m, cells, guards + self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n = puzzle["rows"]
        black = {tuple(b) for b in puzzle["black"]}
        lights = {(r, c) for r in range(n) for c in range(n) if grid[r][c]}
        out = [f"light on black cell ({r + 1}, {c + 1})" for r, c in sorted(lights & black)]
        lit = set(lights)
        for cell in lights - black:
            seen = seen_from(cell, black, n)
            lit |= set(seen)
            out += [
                f"lights ({cell[0] + 1}, {cell[1] + 1}) and ({x[0] + 1}, {x[1] + 1}) see each other"
                for x in seen
                if x in lights and x > cell
            ]
        dark = [(r, c) for r in range(n) for c in range(n) if (r, c) not in black and (r, c) not in lit]
        if dark:
            out.append(f"{len(dark)} white cell(s) unlit, e.g. ({dark[0][0] + 1}, {dark[0][1] + 1})")
        for r, c, k in puzzle["numbers"]:
            got = sum(nb in lights for nb in neighbours(r, c, n, n))
            if got != k:
                out.append(f"black cell ({r + 1}, {c + 1}) touches {got} lights, needs {k}")
        return out

    def free_cells(self, puzzle: dict[str, Any]) -> list[tuple[int, int]]:
        black = {tuple(b) for b in puzzle["black"]}
        return [cell for cell in super().free_cells(puzzle) if cell not in black]

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] ** 2 - len(puzzle["black"]) - len(puzzle["given"])


TASK = LightUp()
