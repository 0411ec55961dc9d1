"""Survo: fill the blanks of a grid holding each of 1..rows*cols once so that rows and columns reach their
sums. Blanks are added one at a time, each only if a backtracking solver still finds a single solution."""

from __future__ import annotations

from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance
from verifiers.logic.fill import FillInTask
from verifiers.logic.grids import line_clue_violations, render

# level -> (rows, cols, blanks wanted)
LEVELS = {1: (3, 3, 3), 2: (3, 4, 5), 3: (4, 4, 7), 4: (4, 5, 9), 5: (5, 5, 11), 6: (5, 6, 13)}


def count_solutions(grid: list[list[int]], row_sums: list[int], col_sums: list[int], limit: int = 2) -> int:
    """Fill the zeros with the missing numbers, counting solutions up to `limit`."""
    rows, cols = len(grid), len(grid[0])
    blanks = [(r, c) for r in range(rows) for c in range(cols) if grid[r][c] == 0]
    present = {v for row in grid for v in row if v}
    missing = [v for v in range(1, rows * cols + 1) if v not in present]
    row_left = [row_sums[r] - sum(grid[r]) for r in range(rows)]
    col_left = [col_sums[c] - sum(grid[r][c] for r in range(rows)) for c in range(cols)]
    row_blanks = [sum(1 for r2, _ in blanks if r2 == r) for r in range(rows)]
    col_blanks = [sum(1 for _, c2 in blanks if c2 == c) for c in range(cols)]
    used = [False] * len(missing)
    found = 0

    def place(i: int) -> None:
        nonlocal found
        if i == len(blanks):
            found += 1
            return
        r, c = blanks[i]
        for j, v in enumerate(missing):
            if used[j] or v > row_left[r] or v > col_left[c]:
                continue
            if (row_blanks[r] == 1 and v != row_left[r]) or (col_blanks[c] == 1 and v != col_left[c]):
                continue
            used[j] = True
            row_left[r] -= v
            col_left[c] -= v
            row_blanks[r] -= 1
            col_blanks[c] -= 1
            place(i + 1)
            used[j] = False
            row_left[r] += v
            col_left[c] += v
            row_blanks[r] += 1
            col_blanks[c] += 1
            if found >= limit:
                return

    if all(x >= 0 for x in row_left + col_left):
        place(0)
    return found


class Survo(FillInTask):
    name = "survo"
    description = "Survo: place the missing numbers of 1..N so every row and column reaches its sum."
    levels = {d: f"{r}x{c} grid, up to {b} blanks" for d, (r, c, b) in LEVELS.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        rows, cols, want = LEVELS[difficulty]
        values = rng.sample(range(1, rows * cols + 1), rows * cols)
        sol = [values[r * cols : (r + 1) * cols] for r in range(rows)]
        row_sums = [sum(row) for row in sol]
        col_sums = [sum(sol[r][c] for r in range(rows)) for c in range(cols)]
        grid = [row[:] for row in sol]
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        rng.shuffle(cells)
        blanks = 0
        for r, c in cells:
            if blanks == want:
                break
            grid[r][c] = 0
            if count_solutions(grid, row_sums, col_sums) == 1:
                blanks += 1
            else:
                grid[r][c] = sol[r][c]
        missing = sorted(sol[r][c] for r in range(rows) for c in range(cols) if grid[r][c] == 0)
        width = len(str(rows * cols))
        table = "\n".join(
            " ".join(str(v).rjust(width) if v else ".".rjust(width) for v in grid[r]) + f" | {row_sums[r]}"
            for r in range(rows)
        )
        table += "\n" + "-" * (cols * (width + 1)) + "\n" + " ".join(str(s).rjust(width) for s in col_sums)
        prompt = (
            f"Survo puzzle: a {rows}x{cols} grid must contain every number 1-{rows * cols} exactly once. Fill "
            "each '.' so that every row adds up to the sum after '|' and every column adds up to the sum "
            f"below the line. The missing numbers are {', '.join(map(str, missing))}.\n\n{table}\n\n"
            f"Answer with the completed grid: {rows} lines of {cols} numbers separated by spaces. "
            + ANSWER_FORMAT
        )
        puzzle = {
            "rows": rows,
            "cols": cols,
            "givens": grid,
            "row_sums": row_sums,
            "col_sums": col_sums,
            "solution": sol,
        }
        return LogicInstance(self.name, difficulty, seed, prompt, render(sol), puzzle)

    def largest(self, puzzle: dict[str, Any]) -> int:
        return puzzle["rows"] * puzzle["cols"]

    def violations(self, puzzle: dict[str, Any], grid: list[list[int]]) -> list[str]:
        rows, cols = puzzle["rows"], puzzle["cols"]
        broken = []
        if sorted(v for row in grid for v in row) != list(range(1, rows * cols + 1)):
            broken.append(f"the numbers are not exactly 1..{rows * cols}")
        clues = [*puzzle["row_sums"], *puzzle["col_sums"]]
        broken += line_clue_violations(grid, clues, sum, "{line} sums to {got}, not {want}")
        return broken

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        return count_solutions(
            [row[:] for row in puzzle["givens"]], puzzle["row_sums"], puzzle["col_sums"], limit
        )


TASK = Survo()
