"""Futoshiki: a latin square with inequality signs between neighbouring cells and a few given numbers.
The generator removes given numbers first, then inequalities, as long as the solution stays unique."""

from __future__ import annotations

from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance
from verifiers.logic.fill import FillInTask, givens_of, show
from verifiers.logic.grids import render
from verifiers.logic.latin import all_vars, latin_model, latin_violations, random_latin
from verifiers.logic.solvers import Lit, SatModel, assumptions_of, reduce_in_phases

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8}

Pair = tuple[tuple[int, int], tuple[int, int]]


def _less(model: SatModel, x, a: tuple[int, int], b: tuple[int, int], n: int) -> Lit:
    """A guard literal that, when true, forces value(a) < value(b)."""
    g = model.fresh()
    for u in range(1, n + 1):
        model.add([-g, -x[a[0]][a[1]][u], *(x[b[0]][b[1]][v] for v in range(u + 1, n + 1))])
    return g


def _model(n: int, pairs: list[Pair]):
    model, x = latin_model(n)
    guards = [_less(model, x, a, b, n) for a, b in pairs]
    return model, x, guards


class Futoshiki(FillInTask):
    name = "futoshiki"
    description = "Fill a latin square that respects '<' constraints between neighbouring cells."
    levels = {d: f"{n}x{n}, givens then inequalities removed until minimal" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        sol = random_latin(rng, n)
        cells = [(r, c) for r in range(n) for c in range(n)]
        neighbours = [((r, c), (r, c + 1)) for r in range(n) for c in range(n - 1)]
        neighbours += [((r, c), (r + 1, c)) for r in range(n - 1) for c in range(n)]
        # orient every neighbouring pair as (smaller, larger) in the solution
        pairs = [(a, b) if sol[a[0]][a[1]] < sol[b[0]][b[1]] else (b, a) for a, b in neighbours]
        model, x, guards = _model(n, pairs)
        givens_clues = [[x[r][c][sol[r][c]]] for r, c in cells]
        with model.session() as s:
            kept_givens, kept_pairs = reduce_in_phases(
                s, all_vars(x), [givens_clues, [[g] for g in guards]], rng
            )
        givens = givens_of(sol, cells, kept_givens)
        less = [[list(pairs[i][0]), list(pairs[i][1])] for i in kept_pairs]
        rules = "\n".join(f"({a[0] + 1},{a[1] + 1}) < ({b[0] + 1},{b[1] + 1})" for a, b in less)
        prompt = (
            f"Solve this {n}x{n} Futoshiki. Fill every '.' with a number 1-{n} so that each row and each "
            f"column contains every number exactly once and every inequality holds. Cells are "
            f"(row,column), numbered from 1 at the top-left.\n\nGrid:\n{show(givens)}\n\nInequalities:\n{rules}\n\n"
            f"Answer with the completed grid: {n} lines of {n} numbers separated by spaces. " + ANSWER_FORMAT
        )
        puzzle = {"n": n, "givens": givens, "less": less, "solution": sol}
        return LogicInstance(self.name, difficulty, seed, prompt, render(sol), puzzle)

    def violations(self, puzzle: dict[str, Any], grid: list[list[int]]) -> list[str]:
        violations = latin_violations(grid)
        violations += [
            f"({a[0] + 1},{a[1] + 1}) < ({b[0] + 1},{b[1] + 1}) broken"
            for a, b in puzzle["less"]
            if not grid[a[0]][a[1]] < grid[b[0]][b[1]]
        ]
        return violations

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        n = puzzle["n"]
        pairs = [(tuple(a), tuple(b)) for a, b in puzzle["less"]]
        model, x, guards = _model(n, pairs)
        given = [x[r][c][v] for r, row in enumerate(puzzle["givens"]) for c, v in enumerate(row) if v]
        with model.session() as s:
            return s.count(
                all_vars(x), given + assumptions_of([[g] for g in guards], range(len(guards))), limit
            )


TASK = Futoshiki()
