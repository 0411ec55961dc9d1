"""Campsite (Tents): place one tent beside each tree (up, down, left, right; each tent belongs to its own
tree), tents never touching (not even diagonally), with the given number of tents per row and column.
Layouts are redrawn until the solution is unique, then cells are revealed if needed."""

from __future__ import annotations

from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import KING, line_clue_violations, neighbours, render, touching_pairs
from verifiers.logic.solvers import SatModel

SIZES = {1: 5, 2: 6, 3: 7, 4: 8, 5: 9, 6: 10}


def perfect_matching(trees: list[tuple[int, int]], tents: set[tuple[int, int]], n: int) -> bool:
    """Can every tree be paired with its own adjacent tent? (Kuhn's augmenting paths.)"""
    owner: dict[tuple[int, int], int] = {}

    def augment(i: int, seen: set[tuple[int, int]]) -> bool:
        for tent in neighbours(*trees[i], n, n):
            if tent in tents and tent not in seen:
                seen.add(tent)
                if tent not in owner or augment(owner[tent], seen):
                    owner[tent] = i
                    return True
        return False

    return len(trees) == len(tents) and all(augment(i, set()) for i in range(len(trees)))


class Campsite(MarkedCellsTask):
    name = "campsite"
    description = "Tents and trees: one tent per tree, tents not touching, row/column tent counts."
    levels = {d: f"{n}x{n} grid" for d, n in SIZES.items()}
    mark = "tent"

    def draw(self, rng, difficulty: int) -> dict[str, Any]:
        n = SIZES[difficulty]
        tents: list[tuple[int, int]] = []
        trees: list[tuple[int, int]] = []
        cells = [(r, c) for r in range(n) for c in range(n)]
        rng.shuffle(cells)
        for cell in cells:
            if (
                rng.random() < 0.5
                or cell in trees
                or any(nb in tents for nb in neighbours(*cell, n, n, KING))
            ):
                continue
            spots = [nb for nb in neighbours(*cell, n, n) if nb not in trees and nb not in tents]
            if spots:
                tents.append(cell)
                trees.append(rng.choice(spots))
        sol = [[int((r, c) in tents) for c in range(n)] for r in range(n)]
        return {
            "rows": n,
            "cols": n,
            "trees": sorted([list(t) for t in trees]),
            "row_counts": [sum(row) for row in sol],
            "col_counts": [sum(row[c] for row in sol) for c in range(n)],
            "given": [],
            "solution": sol,
        }

    def generate(self, difficulty: int, seed: int):
        puzzle = self.settled(self.rng(difficulty, seed), difficulty)
        n = puzzle["rows"]
        tree_cells = {tuple(t) for t in puzzle["trees"]}
        layout = render([["T" if (r, c) in tree_cells else "." for c in range(n)] for r in range(n)])
        prompt = (
            f"Campsite puzzle on a {n}x{n} grid; T marks a tree:\n\n{layout}\n\n"
            "Place tents on empty cells so that: every tree has exactly one tent of its own directly above, "
            "below, left or right of it (so there are as many tents as trees); no two tents touch, not even "
            "diagonally; each row and column holds the number of tents given below.\n"
            f"Tents per row (rows 1-{n}): {' '.join(map(str, puzzle['row_counts']))}\n"
            f"Tents per column (columns 1-{n}): {' '.join(map(str, puzzle['col_counts']))}\n"
            f"{self.given_text(puzzle)}\n" + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n = puzzle["rows"]
        trees = [tuple(t) for t in puzzle["trees"]]
        m = SatModel()
        cells = {(r, c): m.var("t", r, c) for r in range(n) for c in range(n) if (r, c) not in trees}
        pairs: dict[tuple[int, int], list[int]] = {cell: [] for cell in cells}
        for tree in trees:
            options = []
            for nb in neighbours(*tree, n, n):
                if nb in cells:
                    p = m.var("pair", tree, nb)
                    options.append(p)
                    pairs[nb].append(p)
                    m.add([-p, cells[nb]])
            m.exactly(options, 1)
        for cell, lit in cells.items():
            m.add([-lit, *pairs[cell]])  # a tent belongs to an adjacent tree ...
            m.at_most(pairs[cell], 1)  # ... and to only one
            for nb in neighbours(*cell, n, n, KING):
                if nb > cell and nb in cells:
                    m.add([-lit, -cells[nb]])
        for i in range(n):
            m.exactly([lit for (r, _), lit in cells.items() if r == i], puzzle["row_counts"][i])
            m.exactly([lit for (_, c), lit in cells.items() if c == i], puzzle["col_counts"][i])
        return m, cells, self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n = puzzle["rows"]
        trees = [tuple(t) for t in puzzle["trees"]]
        tents = {(r, c) for r in range(n) for c in range(n) if grid[r][c]}
        out = [f"tent on the tree at ({r + 1}, {c + 1})" for r, c in trees if (r, c) in tents]
        clues = [*puzzle["row_counts"], *puzzle["col_counts"]]
        out += line_clue_violations(grid, clues, sum, "{line} has {got} tents, clue {want}")
        out += [
            f"tents at ({r + 1}, {c + 1}) and ({a + 1}, {b + 1}) touch"
            for (r, c), (a, b) in touching_pairs(grid, KING)
        ]
        if not out and not perfect_matching(trees, tents, n):
            out.append("tents cannot be paired one-to-one with adjacent trees")
        return out

    def free_cells(self, puzzle: dict[str, Any]) -> list[tuple[int, int]]:
        trees = {tuple(t) for t in puzzle["trees"]}
        return [cell for cell in super().free_cells(puzzle) if cell not in trees]

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["trees"]) - len(puzzle["given"])


TASK = Campsite()
