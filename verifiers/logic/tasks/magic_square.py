"""Magic square completion: place 1..n² so every row, column and both diagonals have the same sum.
Several completions can be valid, so the verifier checks the rules and the given cells."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.grids import grid_result, named_lines, parse_int_grid, render

# level -> (size, cells given)
LEVELS = {1: (3, 4), 2: (3, 2), 3: (4, 8), 4: (4, 5), 5: (5, 10), 6: (6, 16)}


def magic(n: int) -> list[list[int]]:
    """A classic magic square: Siamese (odd n), the diagonal rule (n % 4 == 0), LUX (n % 4 == 2)."""
    if n % 2:
        grid = [[0] * n for _ in range(n)]
        r, c = 0, n // 2
        for v in range(1, n * n + 1):
            grid[r][c] = v
            nr, nc = (r - 1) % n, (c + 1) % n
            if grid[nr][nc]:
                nr, nc = (r + 1) % n, c
            r, c = nr, nc
        return grid
    if n % 4 == 0:
        return [
            [
                n * n + 1 - (r * n + c + 1) if (r % 4 in (0, 3)) == (c % 4 in (0, 3)) else r * n + c + 1
                for c in range(n)
            ]
            for r in range(n)
        ]
    m = n // 2  # LUX: an odd magic square of half size, each value expanded into a 2x2 pattern
    small = magic(m)
    k = (m - 1) // 2
    out = [[0] * n for _ in range(n)]
    for i in range(m):
        for j in range(m):
            letter = "L" if i <= k else "U" if i == k + 1 else "X"
            if i == k + 1 and j == k:
                letter = "L"
            if i == k and j == k:
                letter = "U"
            base = 4 * (small[i][j] - 1)
            pattern = {"L": (4, 1, 2, 3), "U": (1, 4, 2, 3), "X": (1, 4, 3, 2)}[letter]
            out[2 * i][2 * j], out[2 * i][2 * j + 1] = base + pattern[0], base + pattern[1]
            out[2 * i + 1][2 * j], out[2 * i + 1][2 * j + 1] = base + pattern[2], base + pattern[3]
    return out


def shuffled(rng: random.Random, grid: list[list[int]]) -> list[list[int]]:
    """Apply magic-preserving symmetries: dihedral moves, complement, mirrored row/column pair swaps."""
    n = len(grid)
    for _ in range(rng.randrange(4)):
        grid = [list(row) for row in zip(*grid[::-1], strict=True)]
    if rng.random() < 0.5:
        grid = [row[::-1] for row in grid]
    if rng.random() < 0.5:
        grid = [[n * n + 1 - v for v in row] for row in grid]
    for i in range(n // 2):  # swapping rows i, n-1-i together with columns i, n-1-i keeps the diagonals
        if rng.random() < 0.5:
            grid[i], grid[n - 1 - i] = grid[n - 1 - i], grid[i]
            for row in grid:
                row[i], row[n - 1 - i] = row[n - 1 - i], row[i]
    return grid


def violations(grid: list[list[int]]) -> list[str]:
    n = len(grid)
    target = n * (n * n + 1) // 2
    values = sorted(v for row in grid for v in row)
    out = [] if values == list(range(1, n * n + 1)) else [f"the numbers are not exactly 1..{n * n}"]
    lines = named_lines(grid) + [
        ("main diagonal", [grid[i][i] for i in range(n)]),
        ("anti-diagonal", [grid[i][n - 1 - i] for i in range(n)]),
    ]
    out += [f"{name} sums to {sum(line)}, not {target}" for name, line in lines if sum(line) != target]
    return out


class MagicSquare(LogicTask):
    name = "magic_square"
    description = "Complete a magic square of 1..n² with some cells given (any valid completion counts)."
    levels = {d: f"{n}x{n}, {k} cells given" for d, (n, k) in LEVELS.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, k = LEVELS[difficulty]
        sol = shuffled(rng, magic(n))
        keep = set(rng.sample(range(n * n), k))
        givens = [[sol[r][c] if r * n + c in keep else 0 for c in range(n)] for r in range(n)]
        target = n * (n * n + 1) // 2
        shown = render([[str(v) if v else "." for v in row] for row in givens])
        prompt = (
            f"Complete this {n}x{n} magic square. Fill every '.' so that the grid contains each number "
            f"1-{n * n} exactly once and every row, every column and both main diagonals sum to {target}.\n\n"
            f"{shown}\n\nAnswer with the completed grid: {n} lines of {n} numbers separated by spaces. "
            + ANSWER_FORMAT
        )
        return LogicInstance(self.name, difficulty, seed, prompt, render(sol), {"n": n, "givens": givens})

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n"]
        grid = parse_int_grid(answer, n, n)
        broken = violations(grid)
        changed = [
            [r + 1, c + 1]
            for r, row in enumerate(puzzle["givens"])
            for c, v in enumerate(row)
            if v and grid[r][c] != v
        ]
        if changed:
            broken.append("given cells changed")
        return grid_result(changed, broken)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return sum(v == 0 for row in puzzle["givens"] for v in row)

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        n = instance.puzzle["n"]
        grid = parse_int_grid(instance.answer, n, n)
        blanks = [(r, c) for r in range(n) for c in range(n) if not instance.puzzle["givens"][r][c]]
        r, c = blanks[seed % len(blanks)]
        grid[r][c] = grid[r][c] % (n * n) + 1
        return render(grid)


TASK = MagicSquare()
