"""Latin squares, shared by sudoku, latin_square, futoshiki, calcudoku and skyscraper: a random filler,
the SAT rules, and the rule check used by the verifiers."""

from __future__ import annotations

import random
from collections.abc import Sequence

from verifiers.logic.solvers import Lit, SatModel

Box = tuple[int, int]  # (box rows, box cols) for sudoku; None for a plain latin square


def random_latin(rng: random.Random, n: int, box: Box | None = None) -> list[list[int]]:
    """A uniformly shuffled valid grid (values 1..n). Sudoku grids come from the banded base pattern
    shuffled by the symmetries that keep it valid; plain squares from randomised backtracking."""
    if box:
        br, bc = box
        base = [[(bc * (r % br) + r // br + c) % n for c in range(n)] for r in range(n)]
        bands = rng.sample(range(n // br), n // br)
        rows = [b * br + r for b in bands for r in rng.sample(range(br), br)]
        stacks = rng.sample(range(n // bc), n // bc)
        cols = [s * bc + c for s in stacks for c in rng.sample(range(bc), bc)]
        digits = rng.sample(range(1, n + 1), n)
        return [[digits[base[r][c]] for c in cols] for r in rows]
    grid = [[0] * n for _ in range(n)]

    def fill(k: int) -> bool:
        if k == n * n:
            return True
        r, c = divmod(k, n)
        used = set(grid[r][:c]) | {grid[i][c] for i in range(r)}
        for v in rng.sample(range(1, n + 1), n):
            if v not in used:
                grid[r][c] = v
                if fill(k + 1):
                    return True
        grid[r][c] = 0
        return False

    fill(0)
    return grid


def latin_model(n: int, box: Box | None = None) -> tuple[SatModel, list[list[dict[int, Lit]]]]:
    """CNF for an n x n latin square (plus sudoku boxes): x[r][c][v] is true when cell (r, c) holds v."""
    m = SatModel()
    x = [[m.one_hot(("x", r, c), range(1, n + 1)) for c in range(n)] for r in range(n)]
    groups = [[(r, c) for c in range(n)] for r in range(n)] + [[(r, c) for r in range(n)] for c in range(n)]
    if box:
        br, bc = box
        groups += [
            [(r0 + i, c0 + j) for i in range(br) for j in range(bc)]
            for r0 in range(0, n, br)
            for c0 in range(0, n, bc)
        ]
    for cells in groups:
        for v in range(1, n + 1):
            m.exactly([x[r][c][v] for r, c in cells], 1)
    return m, x


def all_vars(x: Sequence[Sequence[dict[int, Lit]]]) -> list[Lit]:
    return [lit for row in x for cell in row for lit in cell.values()]


def decode(x: Sequence[Sequence[dict[int, Lit]]], true: set[int]) -> list[list[int]]:
    return [[next(v for v, lit in cell.items() if lit in true) for cell in row] for row in x]


def latin_violations(grid: Sequence[Sequence[int]], box: Box | None = None) -> list[str]:
    """Rule breaks of a filled grid: values outside 1..n, repeats in a row, column or box."""
    n = len(grid)
    out = [
        f"cell ({r + 1},{c + 1}) holds {grid[r][c]}, outside 1..{n}"
        for r in range(n)
        for c in range(n)
        if not 1 <= grid[r][c] <= n
    ]
    for i in range(n):
        if len(set(grid[i])) < n:
            out.append(f"row {i + 1} repeats a value")
        if len({grid[r][i] for r in range(n)}) < n:
            out.append(f"column {i + 1} repeats a value")
    if box:
        br, bc = box
        for r0 in range(0, n, br):
            for c0 in range(0, n, bc):
                if len({grid[r0 + i][c0 + j] for i in range(br) for j in range(bc)}) < n:
                    out.append(f"box at ({r0 + 1},{c0 + 1}) repeats a value")
    return out
