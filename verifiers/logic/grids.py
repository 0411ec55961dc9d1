"""Grid helpers shared by the grid puzzles: answer parsing, rendering, neighbourhoods.

Models write grids in many layouts: one row per line separated by spaces, commas or bars, Python-style
nested lists, or digits run together ("4213"). `parse_grid` accepts all of them as long as the text holds
nothing but cell tokens and those separators and the cells come out as exactly rows x cols, and raises
`ParseError` (reward 0, "parse error" detail) otherwise: a stray word or a second grid is never skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from verifiers.logic.base import ParseError
from verifiers.logic.textutil import no_repeats, parse_int, scan

Cell = tuple[int, int]
ORTHOGONAL = ((-1, 0), (1, 0), (0, -1), (0, 1))
KING = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))
GRID_SEPARATORS = r"\s,;|\[\]()"  # spaces, commas, bars and nested-list brackets between cells
COORD_SEPARATORS = r"\s,;\[\]()"


def parse_grid(text: str, rows: int, cols: int, token: str = r"-?\d+") -> list[list[str]]:
    """Read a rows x cols grid of tokens (regex ``token``) from free-form text.

    Row-per-line layouts are tried first; a line holding a single run of ``cols`` one-character cells
    ("4213") is split into characters. Failing that, all tokens in reading order are chunked into rows.
    """
    scan(text, token, GRID_SEPARATORS, f"a {rows}x{cols} grid")
    pattern = re.compile(token, re.ASCII)
    lines = [pattern.findall(line) for line in text.splitlines()]
    lines = [found for found in lines if found]
    if len(lines) == rows:
        grid = [_split_run(found, cols) for found in lines]
        if all(len(row) == cols for row in grid):
            return grid
    flat = [tok for found in lines for tok in found]
    if len(flat) == rows * cols:
        return [flat[r * cols : (r + 1) * cols] for r in range(rows)]
    if len(flat) == rows and all(len(tok) == cols for tok in flat):  # "12 34" for a 2x2 digit grid
        return [list(tok) for tok in flat]
    raise ParseError(f"expected a {rows}x{cols} grid, found {len(lines)} row(s) with {len(flat)} cell(s)")


def _split_run(found: list[str], cols: int) -> list[str]:
    if len(found) == 1 and cols > 1 and len(found[0]) == cols:
        return list(found[0])
    return found


def parse_int_grid(text: str, rows: int, cols: int) -> list[list[int]]:
    return [[parse_int(tok) for tok in row] for row in parse_grid(text, rows, cols, r"\d+")]


def parse_binary_grid(text: str, rows: int, cols: int, on: str = "1#", off: str = "0.") -> list[list[int]]:
    """A grid of two symbols (1/0, or '#'/'.'); returns 1 for `on` cells."""
    symbols = re.escape(on + off)
    grid = parse_grid(text, rows, cols, rf"(?i)[{symbols}]")
    return [[1 if tok.upper() in on.upper() else 0 for tok in row] for row in grid]


def parse_coords(text: str) -> list[Cell]:
    """All (row, col) pairs in reading order, from "(1,2) (3, 4)", "1 2; 3 4", "[[1,2],[3,4]]", ...
    Coordinates stay as written (prompts use 1-based ones); a pair listed twice is a parse error."""
    numbers = [parse_int(n) for n in scan(text, r"\d+", COORD_SEPARATORS, "a list of (row, column) pairs")]
    if len(numbers) % 2:
        raise ParseError(f"odd number of coordinates ({len(numbers)}): expected (row, column) pairs")
    pairs = [(numbers[i], numbers[i + 1]) for i in range(0, len(numbers), 2)]
    no_repeats(pairs, "the cell")
    return pairs


def render_cells(cells: Sequence[Sequence[int]]) -> str:
    """1-based (row, column) pairs as "(1, 2), (3, 4)"."""
    return ", ".join(f"({r}, {c})" for r, c in cells)


def render(grid: Sequence[Sequence[object]], sep: str = " ") -> str:
    return "\n".join(sep.join(str(v) for v in row) for row in grid)


def inside(r: int, c: int, rows: int, cols: int) -> bool:
    return 0 <= r < rows and 0 <= c < cols


def neighbours(r: int, c: int, rows: int, cols: int, steps: Sequence[Cell] = ORTHOGONAL) -> Iterator[Cell]:
    for dr, dc in steps:
        if inside(r + dr, c + dc, rows, cols):
            yield r + dr, c + dc


def random_row_placement(rng, n: int, fits: Callable[[list[int], int], bool]) -> list[int]:
    """cols[row]: one column per row of an n x n board, by randomised backtracking over the rows, where
    ``fits(cols, c)`` says whether column c may follow the columns ``cols`` placed in the rows above."""
    cols: list[int] = []

    def place(r: int) -> bool:
        if r == n:
            return True
        for c in rng.sample(range(n), n):
            if fits(cols, c):
                cols.append(c)
                if place(r + 1):
                    return True
                cols.pop()
        return False

    place(0)
    return cols


def touching_pairs(
    grid: Sequence[Sequence[object]], steps: Sequence[Cell] = ORTHOGONAL
) -> list[tuple[Cell, Cell]]:
    """Every pair of marked (truthy) cells that are neighbours by ``steps``, once each, in row-major order."""
    rows, cols = len(grid), len(grid[0]) if grid else 0
    return [
        ((r, c), (a, b))
        for r in range(rows)
        for c in range(cols)
        if grid[r][c]
        for a, b in neighbours(r, c, rows, cols, steps)
        if (a, b) > (r, c) and grid[a][b]
    ]


def named_lines(grid: Sequence[Sequence[object]]) -> list[tuple[str, list]]:
    """("row i", its cells) for every row, then ("column j", its cells) for every column, 1-based."""
    rows = [(f"row {i + 1}", list(row)) for i, row in enumerate(grid)]
    return rows + [(f"column {j + 1}", [row[j] for row in grid]) for j in range(len(grid[0]) if grid else 0)]


def line_clue_violations(
    grid: Sequence[Sequence[object]], clues: Sequence[object], measure: Callable[[list], object], message: str
) -> list[str]:
    """``message`` (with ``{line}``, ``{got}``, ``{want}``) for every row, then column, whose ``measure``
    differs from its clue; ``clues`` are the row clues followed by the column clues."""
    return [
        message.format(line=name, got=got, want=want)
        for (name, cells), want in zip(named_lines(grid), clues, strict=True)
        if (got := measure(cells)) != want
    ]


def diff_cells(answer: Sequence[Sequence[object]], gold: Sequence[Sequence[object]]) -> list[list[int]]:
    """1-based [row, col] of every cell where the answer differs from the gold grid."""
    return [
        [r + 1, c + 1] for r, row in enumerate(gold) for c, value in enumerate(row) if answer[r][c] != value
    ]


def grid_result(wrong: list, violations: list[str]) -> tuple[float, dict]:
    """The common scoring record: reward 1 only when nothing is wrong."""
    ok = not wrong and not violations
    details: dict = {"correct": ok}
    if wrong:
        details["wrong_cells"] = wrong
    if violations:
        details["violations"] = violations[:20]
    return (1.0 if ok else 0.0), details


def random_regions(rng, rows: int, cols: int, seeds: Sequence[Sequence[Cell]]) -> list[list[int]]:
    """Partition the grid into connected regions grown at random from the given seed cells
    (region i contains the cells seeds[i]); used by star placement and norinori."""
    region = [[-1] * cols for _ in range(rows)]
    frontier: list[tuple[Cell, int]] = []
    for i, cells in enumerate(seeds):
        for r, c in cells:
            region[r][c] = i
    for i, cells in enumerate(seeds):
        for r, c in cells:
            frontier += [((nr, nc), i) for nr, nc in neighbours(r, c, rows, cols)]
    while frontier:
        (r, c), i = frontier.pop(rng.randrange(len(frontier)))
        if region[r][c] != -1:
            continue
        region[r][c] = i
        frontier += [((nr, nc), i) for nr, nc in neighbours(r, c, rows, cols) if region[nr][nc] == -1]
    return region
