"""Sudoku: fill the grid so every row, column and box holds each digit once. Unique solution."""

from __future__ import annotations

from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance
from verifiers.logic.fill import FillInTask, givens_of, show
from verifiers.logic.grids import render
from verifiers.logic.latin import all_vars, latin_model, latin_violations, random_latin
from verifiers.logic.solvers import reduce_clues

# level -> (size, box rows, box cols, blanks wanted; None = remove clues until minimal)
LEVELS: dict[int, tuple[int, int, int, int | None]] = {
    1: (4, 2, 2, 8),
    2: (6, 2, 3, 18),
    3: (6, 2, 3, None),
    4: (9, 3, 3, 45),
    5: (9, 3, 3, 52),
    6: (9, 3, 3, None),
}


class Sudoku(FillInTask):
    name = "sudoku"
    description = "Complete a Sudoku grid (4x4, 6x6 or 9x9) with a unique solution."
    levels = {
        1: "4x4 (2x2 boxes), 8 blanks",
        2: "6x6 (2x3 boxes), 18 blanks",
        3: "6x6, clues removed until minimal",
        4: "9x9, 45 blanks",
        5: "9x9, 52 blanks",
        6: "9x9, clues removed until minimal (typically 55-60 blanks)",
    }

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, br, bc, blanks = LEVELS[difficulty]
        solution = random_latin(rng, n, (br, bc))
        model, x = latin_model(n, (br, bc))
        cells = [(r, c) for r in range(n) for c in range(n)]
        clues = [[x[r][c][solution[r][c]]] for r, c in cells]
        with model.session() as s:
            kept = reduce_clues(s, all_vars(x), clues, rng, keep=0 if blanks is None else n * n - blanks)
        givens = givens_of(solution, cells, kept)
        puzzle = {"n": n, "box": [br, bc], "givens": givens, "solution": solution}
        prompt = (
            f"Solve this {n}x{n} Sudoku. Fill every '.' with a digit 1-{n} so that each row, each column "
            f"and each {br}x{bc} box contains every digit 1-{n} exactly once.\n\n{show(givens)}\n\n"
            f"Answer with the completed grid: {n} lines, each with {n} digits separated by spaces. "
            + ANSWER_FORMAT
        )
        return LogicInstance(self.name, difficulty, seed, prompt, render(solution), puzzle)

    def violations(self, puzzle: dict[str, Any], grid: list[list[int]]) -> list[str]:
        return latin_violations(grid, tuple(puzzle["box"]))

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        n = puzzle["n"]
        model, x = latin_model(n, tuple(puzzle["box"]))
        given = [x[r][c][v] for r, row in enumerate(puzzle["givens"]) for c, v in enumerate(row) if v]
        with model.session() as s:
            return s.count(all_vars(x), given, limit)


TASK = Sudoku()
