"""Minesweeper deduction: some safe cells show how many of their eight neighbours are mines; find every
mine. Starting from a fully revealed board, revealed cells are hidden again while the mine layout stays
the only one consistent with the numbers and the total mine count."""

from __future__ import annotations

from typing import Any

from verifiers.logic.binary import Grid, MarkedCellsTask
from verifiers.logic.grids import KING, neighbours, render
from verifiers.logic.solvers import SatModel, reduce_clues

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}
DENSITY = 0.2


class Minesweeper(MarkedCellsTask):
    name = "minesweeper"
    description = "Find all mines from the revealed neighbour counts and the total number of mines."
    levels = {d: f"{n}x{n} board, about {round(DENSITY * n * n)} mines" for d, n in SIZES.items()}
    answer_style = "coords"
    mark = "mine"

    def generate(self, difficulty: int, seed: int):
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        cells = [(r, c) for r in range(n) for c in range(n)]
        mines = set(rng.sample(cells, max(1, round(DENSITY * n * n))))
        sol = [[int((r, c) in mines) for c in range(n)] for r in range(n)]
        safe = [cell for cell in cells if cell not in mines]
        revealed = [[r, c, sum(nb in mines for nb in neighbours(r, c, n, n, KING))] for r, c in safe]
        puzzle = {
            "rows": n,
            "cols": n,
            "mines": len(mines),
            "revealed": revealed,
            "given": [],
            "solution": sol,
        }
        model, lits, guards = self.build(puzzle)
        with model.session() as s:
            kept = reduce_clues(s, list(lits.values()), [[g] for g in guards], rng)
        puzzle["revealed"] = [revealed[i] for i in kept]
        board = [["?"] * n for _ in range(n)]
        for r, c, k in puzzle["revealed"]:
            board[r][c] = str(k)
        prompt = (
            f"Minesweeper board, {n}x{n}, with {len(mines)} mines in total. A digit is a revealed safe cell "
            f"showing how many of its up to eight neighbours (including diagonals) are mines; '?' is "
            f"unrevealed:\n\n{render(board)}\n\nThe numbers determine where every mine is. Find all of them.\n"
            + self.answer_format(puzzle)
        )
        return self.instance(difficulty, seed, prompt, puzzle)

    def build(self, puzzle: dict[str, Any]):
        n = puzzle["rows"]
        m = SatModel()
        cells = {(r, c): m.var("mine", r, c) for r in range(n) for c in range(n)}
        m.exactly(list(cells.values()), puzzle["mines"])
        guards = []
        for r, c, k in puzzle["revealed"]:
            guards.append(g := m.fresh())
            m.add([-g, -cells[r, c]])
            m.exactly([cells[nb] for nb in neighbours(r, c, n, n, KING)], k, guard=g)
        return m, cells, guards

    def violations(self, puzzle: dict[str, Any], grid: Grid) -> list[str]:
        n = puzzle["rows"]
        total = sum(map(sum, grid))
        out = [f"{total} mines marked, the board has {puzzle['mines']}"] if total != puzzle["mines"] else []
        for r, c, k in puzzle["revealed"]:
            if grid[r][c]:
                out.append(f"({r + 1}, {c + 1}) is a revealed safe cell")
            got = sum(grid[a][b] for a, b in neighbours(r, c, n, n, KING))
            if got != k:
                out.append(f"({r + 1}, {c + 1}) shows {k} but {got} neighbouring mines are marked")
        return out

    def free_cells(self, puzzle: dict[str, Any]) -> list[tuple[int, int]]:
        shown = {(r, c) for r, c, _ in puzzle["revealed"]}
        return [cell for cell in super().free_cells(puzzle) if cell not in shown]

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["rows"] * puzzle["cols"] - len(puzzle["revealed"])


TASK = Minesweeper()
