"""Nonogram: shade cells so each row's and column's runs of shaded cells match its clue. Random pictures
are redrawn until the clues determine them uniquely; after a few draws, cells are revealed instead."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import line_clue_violations
from verifiers.logic.solvers import SatModel

SIZES = {1: (5, 5), 2: (6, 6), 3: (8, 8), 4: (10, 10), 5: (12, 12), 6: (15, 15)}


def runs(line: list[int] | tuple[int, ...]) -> list[int]:
    return [len(m) for m in re.findall("1+", "".join(map(str, line)))]


@cache
def patterns(length: int, clue: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every line of `length` cells whose runs are `clue`."""
    if not clue:
        return [(0,) * length]
    first, rest = clue[0], clue[1:]
    need = sum(rest) + len(rest)
    out = []
    for start in range(length - need - first + 1):
        head = (0,) * start + (1,) * first
        if rest:
            head += (0,)
            out += [head + tail for tail in patterns(length - len(head), rest)]
        else:
            out.append(head + (0,) * (length - len(head)))
    return out


class Nonogram(MarkedCellsTask):
    name = "nonogram"
    description = "Nonogram: shade cells so every row and column shows its runs of shaded cells."
    levels = {d: f"{r}x{c} grid" for d, (r, c) in SIZES.items()}
    mark = "shaded"

    def draw(self, rng, difficulty: int) -> dict[str, Any]:
        rows, cols = SIZES[difficulty]
        sol = [[int(rng.random() < 0.6) for _ in range(cols)] for _ in range(rows)]
        return {
            "rows": rows,
            "cols": cols,
            "row_clues": [runs(row) for row in sol],
            "col_clues": [runs([row[c] for row in sol]) for c in range(cols)],
            "given": [],
            "solution": sol,
        }

    def generate(self, difficulty: int, seed: int):
        puzzle = self.settled(self.rng(difficulty, seed), difficulty)
        rows, cols = puzzle["rows"], puzzle["cols"]

        def fmt(clues: list[list[int]]) -> str:
            return "\n".join(f"  {i + 1}: {' '.join(map(str, clue)) or '0'}" for i, clue in enumerate(clues))

        prompt = (
            f"Nonogram on a {rows}x{cols} grid. Each clue lists, in order, the lengths of the runs of "
            "consecutive shaded cells in that row (left to right) or column (top to bottom); runs are "
            "separated by at least one empty cell, and 0 means the line is empty.\n\n"
            f"Row clues:\n{fmt(puzzle['row_clues'])}\nColumn clues:\n{fmt(puzzle['col_clues'])}\n"
            f"{self.given_text(puzzle)}\n" + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        rows, cols = puzzle["rows"], puzzle["cols"]
        m = SatModel()
        cells = {(r, c): m.var("b", r, c) for r in range(rows) for c in range(cols)}
        lines = [([(i, c) for c in range(cols)], clue) for i, clue in enumerate(puzzle["row_clues"])]
        lines += [([(r, i) for r in range(rows)], clue) for i, clue in enumerate(puzzle["col_clues"])]
        for line, clue in lines:
            columns = [{0: -cells[cell], 1: cells[cell]} for cell in line]
            m.table(columns, patterns(len(line), tuple(clue)))
        return m, cells, self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        clues = [*puzzle["row_clues"], *puzzle["col_clues"]]
        return line_clue_violations(grid, clues, runs, "{line} has runs {got}, clue {want}")

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["given"])


TASK = Nonogram()
