"""Binairo (Takuzu): fill a grid with 0/1 so each row and column has equally many of each, no three equal
digits in a line, and no two rows or two columns are identical. A random valid grid comes from the SAT
solver with random phases; givens are removed while the solution stays unique."""

from __future__ import annotations

from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import named_lines, render
from verifiers.logic.solvers import SatModel, reduce_clues

SIZES = {1: 4, 2: 6, 3: 8, 4: 10, 5: 12}


class Binairo(MarkedCellsTask):
    name = "binairo"
    description = "Binairo/Takuzu: balanced 0/1 rows and columns, no triples, no repeated lines."
    levels = {d: f"{n}x{n} grid, givens removed until minimal" for d, n in SIZES.items()}
    mark = "1"

    def generate(self, difficulty: int, seed: int):
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        puzzle: dict[str, Any] = {"rows": n, "cols": n, "given": []}
        model, cells, _ = self.build(puzzle)
        over = list(cells.values())
        with model.session() as s:
            true = s.random_solution(over, rng)
            order = sorted(cells)
            clues = [[cells[cell] if cells[cell] in true else -cells[cell]] for cell in order]
            kept = reduce_clues(s, over, clues, rng)
        sol = self.grid_of(true, cells, n, n)
        puzzle["solution"] = sol
        puzzle["given"] = [[*order[i], sol[order[i][0]][order[i][1]]] for i in kept]
        shown = [["."] * n for _ in range(n)]
        for r, c, v in puzzle["given"]:
            shown[r][c] = str(v)
        prompt = (
            f"Binairo puzzle on a {n}x{n} grid. Fill every '.' with 0 or 1 so that each row and each column "
            f"contains {n // 2} zeros and {n // 2} ones, no row or column has three equal digits in a row, and "
            f"no two rows and no two columns are identical.\n\n{render(shown)}\n\n"
            f"Answer with the completed grid: {n} lines of {n} digits (0/1) separated by spaces. "
            "Put your final answer inside <answer></answer> tags."
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n = puzzle["rows"]
        m = SatModel()
        cells = {(r, c): m.var("b", r, c) for r in range(n) for c in range(n)}
        lines = [[(i, j) for j in range(n)] for i in range(n)] + [
            [(j, i) for j in range(n)] for i in range(n)
        ]
        for line in lines:
            lits = [cells[cell] for cell in line]
            m.exactly(lits, n // 2)
            for a, b, c in zip(lits, lits[1:], lits[2:], strict=False):
                m.add([a, b, c])
                m.add([-a, -b, -c])
        for group in (lines[:n], lines[n:]):  # rows pairwise distinct, columns pairwise distinct
            for i in range(n):
                for j in range(i + 1, n):
                    differs = []
                    for a, b in zip(group[i], group[j], strict=True):
                        d = m.fresh()
                        m.add([-d, cells[a], cells[b]])
                        m.add([-d, -cells[a], -cells[b]])
                        differs.append(d)
                    m.add(differs)
        return m, cells, self.given_literals(puzzle, cells)

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n = puzzle["rows"]
        out = []
        for name, line in named_lines(grid):
            if sum(line) != n // 2:
                out.append(f"{name} has {sum(line)} ones")
            if any(line[k] == line[k + 1] == line[k + 2] for k in range(n - 2)):
                out.append(f"{name} has three equal digits in a row")
        rows = [tuple(row) for row in grid]
        cols = [tuple(row[c] for row in grid) for c in range(n)]
        if len(set(rows)) < n:
            out.append("two rows are identical")
        if len(set(cols)) < n:
            out.append("two columns are identical")
        return out

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["given"])


TASK = Binairo()
