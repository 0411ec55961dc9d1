"""N-Queens with some queens already placed: complete the board so no two queens attack each other.
Many completions may exist; the verifier checks the rules."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.grids import grid_result, parse_coords, random_row_placement

# level -> (board size, queens given)
LEVELS = {1: (5, 2), 2: (6, 2), 3: (8, 3), 4: (10, 3), 5: (12, 4), 6: (14, 4)}


def random_queens(rng: random.Random, n: int) -> list[int]:
    """cols[row] of a random solution: randomised backtracking over rows."""

    def fits(cols: list[int], c: int) -> bool:
        r = len(cols)
        return all(c != c2 and abs(c - c2) != r - r2 for r2, c2 in enumerate(cols))

    return random_row_placement(rng, n, fits)


class NQueens(LogicTask):
    name = "n_queens"
    description = "Complete an N-Queens board that already holds a few queens."
    levels = {d: f"{n}x{n} board, {k} queens given" for d, (n, k) in LEVELS.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, k = LEVELS[difficulty]
        cols = random_queens(rng, n)
        given = sorted(rng.sample(range(n), k))
        givens = [[r + 1, cols[r] + 1] for r in given]
        board = "\n".join(
            " ".join("Q" if cols[r] == c and r in given else "." for c in range(n)) for r in range(n)
        )
        prompt = (
            f"Place {n} queens on a {n}x{n} chessboard so that no two share a row, a column or a diagonal. "
            f"{k} queens are already placed (Q); keep them.\n\n{board}\n\n"
            f"Rows and columns are numbered 1-{n} from the top-left. Answer with the positions of all {n} "
            "queens (including the given ones) as (row, column) pairs, e.g. (1, 3), (2, 5), ... "
            + ANSWER_FORMAT
        )
        answer = ", ".join(f"({r + 1}, {c + 1})" for r, c in enumerate(cols))
        return LogicInstance(self.name, difficulty, seed, prompt, answer, {"n": n, "givens": givens})

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n"]
        queens = parse_coords(answer)
        if len(queens) != n:
            raise ParseError(f"expected {n} (row, column) pairs, found {len(queens)}")
        violations = [f"({r}, {c}) is off the board" for r, c in queens if not (1 <= r <= n and 1 <= c <= n)]
        violations += [f"given queen ({r}, {c}) missing" for r, c in puzzle["givens"] if (r, c) not in queens]
        for i, (r1, c1) in enumerate(queens):
            for r2, c2 in queens[i + 1 :]:
                if r1 == r2 or c1 == c2 or abs(r1 - r2) == abs(c1 - c2):
                    violations.append(f"({r1}, {c1}) attacks ({r2}, {c2})")
        return grid_result([], violations)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["n"] - len(puzzle["givens"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        n = instance.puzzle["n"]
        queens = parse_coords(instance.answer)
        free = [i for i, q in enumerate(queens) if list(q) not in instance.puzzle["givens"]]
        i = free[seed % len(free)]
        r, c = queens[i]
        queens[i] = (r, c % n + 1)  # that column is taken by another queen: always an attack
        return ", ".join(f"({r}, {c})" for r, c in queens)


TASK = NQueens()
