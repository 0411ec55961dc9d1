"""Latin square completion: fill the grid so each row and column holds 1..n once. Clues are removed
only while the completion stays unique (checked by the SAT solver)."""

from __future__ import annotations

from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance
from verifiers.logic.fill import FillInTask, givens_of, show
from verifiers.logic.grids import render
from verifiers.logic.latin import all_vars, latin_model, latin_violations, random_latin
from verifiers.logic.solvers import reduce_clues

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}


class LatinSquare(FillInTask):
    name = "latin_square"
    description = "Complete a partially filled latin square whose completion is unique."
    levels = {d: f"{n}x{n}, clues removed until minimal" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        solution = random_latin(rng, n)
        model, x = latin_model(n)
        cells = [(r, c) for r in range(n) for c in range(n)]
        with model.session() as s:
            kept = reduce_clues(s, all_vars(x), [[x[r][c][solution[r][c]]] for r, c in cells], rng)
        givens = givens_of(solution, cells, kept)
        prompt = (
            f"Complete this {n}x{n} latin square: replace every '.' with a number 1-{n} so that each row and "
            f"each column contains every number 1-{n} exactly once.\n\n{show(givens)}\n\n"
            f"Answer with the completed grid: {n} lines of {n} numbers separated by spaces. " + ANSWER_FORMAT
        )
        puzzle = {"n": n, "givens": givens, "solution": solution}
        return LogicInstance(self.name, difficulty, seed, prompt, render(solution), puzzle)

    def violations(self, puzzle: dict[str, Any], grid: list[list[int]]) -> list[str]:
        return latin_violations(grid)

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        model, x = latin_model(puzzle["n"])
        given = [x[r][c][v] for r, row in enumerate(puzzle["givens"]) for c, v in enumerate(row) if v]
        with model.session() as s:
            return s.count(all_vars(x), given, limit)


TASK = LatinSquare()
