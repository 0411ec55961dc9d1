"""Numbrix: fill the grid with 1..n² so that consecutive numbers are orthogonal neighbours (a
Hamiltonian path). The path is drawn at random with backbite moves; given numbers are removed while the
SAT solver proves the path unique."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance
from verifiers.logic.fill import FillInTask, givens_of, show
from verifiers.logic.grids import neighbours, render
from verifiers.logic.solvers import SatModel, reduce_clues

# level -> (size, givens to stop at; 0 = remove until minimal). Proving a sparse 7x7 or 8x8 path unique
# takes the SAT solver long, so those levels stop while a quarter of the cells are still given.
LEVELS = {1: (4, 0), 2: (5, 0), 3: (6, 0), 4: (7, 14), 5: (8, 24)}


def random_path(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """A random Hamiltonian path of the n x n grid: a serpentine scrambled by backbite moves."""
    path = [(r, c if r % 2 == 0 else n - 1 - c) for r in range(n) for c in range(n)]
    for _ in range(20 * n * n):
        if rng.random() < 0.5:
            path.reverse()
        end = path[-1]
        nb = rng.choice(list(neighbours(*end, n, n)))
        i = path.index(nb)
        if i != len(path) - 2:
            path[i + 1 :] = path[i + 1 :][::-1]
    return path


def _model(n: int):
    m = SatModel()
    cells = [(r, c) for r in range(n) for c in range(n)]
    values = range(1, n * n + 1)
    x = {cell: m.one_hot(("x", cell), values) for cell in cells}
    for v in values:
        m.exactly([x[cell][v] for cell in cells], 1)
        if v < n * n:
            for cell in cells:
                m.add([-x[cell][v], *(x[nb][v + 1] for nb in neighbours(*cell, n, n))])
    return m, x


class Numbrix(FillInTask):
    name = "numbrix"
    description = "Numbrix: complete a path of consecutive numbers 1..n² through orthogonal neighbours."
    levels = {
        d: f"{n}x{n} grid, " + (f"{k} numbers given" if k else "givens removed until minimal")
        for d, (n, k) in LEVELS.items()
    }

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, keep = LEVELS[difficulty]
        sol = [[0] * n for _ in range(n)]
        for v, (r, c) in enumerate(random_path(rng, n), 1):
            sol[r][c] = v
        model, x = _model(n)
        cells = sorted(x)
        over = [lit for cell in cells for lit in x[cell].values()]
        with model.session() as s:
            kept = reduce_clues(s, over, [[x[r, c][sol[r][c]]] for r, c in cells], rng, keep=keep)
        givens = givens_of(sol, cells, kept)
        prompt = (
            f"Numbrix on a {n}x{n} grid. Fill every '.' so that the grid holds each number 1-{n * n} exactly "
            "once and every pair of consecutive numbers (1 and 2, 2 and 3, ...) sits in cells that share an "
            f"edge (up, down, left or right; not diagonally).\n\n{show(givens)}\n\n"
            f"Answer with the completed grid: {n} lines of {n} numbers separated by spaces. " + ANSWER_FORMAT
        )
        puzzle = {"n": n, "givens": givens, "solution": sol}
        return LogicInstance(self.name, difficulty, seed, prompt, render(sol), puzzle)

    def largest(self, puzzle: dict[str, Any]) -> int:
        return puzzle["n"] ** 2

    def violations(self, puzzle: dict[str, Any], grid: list[list[int]]) -> list[str]:
        n = puzzle["n"]
        where = {v: (r, c) for r in range(n) for c in range(n) for v in [grid[r][c]]}
        broken = (
            []
            if sorted(where) == list(range(1, n * n + 1)) and len(where) == n * n
            else [f"the numbers are not exactly 1..{n * n}"]
        )
        if not broken:
            broken += [
                f"{v} and {v + 1} are not neighbours"
                for v in range(1, n * n)
                if abs(where[v][0] - where[v + 1][0]) + abs(where[v][1] - where[v + 1][1]) != 1
            ]
        return broken

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        n = puzzle["n"]
        model, x = _model(n)
        given = [x[r, c][v] for r, row in enumerate(puzzle["givens"]) for c, v in enumerate(row) if v]
        with model.session() as s:
            return s.count([lit for cell in sorted(x) for lit in x[cell].values()], given, limit)


TASK = Numbrix()
