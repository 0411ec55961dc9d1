"""Calcudoku (KenKen): a latin square split into cages; each cage's numbers combine with its operation
(+, -, *, /) to its target. Random cages are drawn, then any cage where two solutions differ is split
into single cells until the solver proves the solution unique."""

from __future__ import annotations

import itertools
import math
import random
import string
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.grids import diff_cells, grid_result, neighbours, parse_int_grid, render
from verifiers.logic.latin import all_vars, decode, latin_model, latin_violations, random_latin

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8}
CAGE_SIZES = (1, 2, 2, 2, 3, 3, 3, 4)


def combine(op: str, values: list[int]) -> int | None:
    if op == "+":
        return sum(values)
    if op == "*":
        return math.prod(values)
    if op == "=":
        return values[0]
    a, b = max(values), min(values)
    if op == "-":
        return a - b
    return a // b if b and a % b == 0 else None  # "/"; a 0 in an answer divides nothing


def random_cages(rng: random.Random, sol: list[list[int]]) -> list[dict[str, Any]]:
    n = len(sol)
    owner = [[-1] * n for _ in range(n)]
    cages: list[list[tuple[int, int]]] = []
    cells = [(r, c) for r in range(n) for c in range(n)]
    rng.shuffle(cells)
    for start in cells:
        if owner[start[0]][start[1]] != -1:
            continue
        cage, want = [start], rng.choice(CAGE_SIZES)
        owner[start[0]][start[1]] = len(cages)
        while len(cage) < want:
            free = [nb for cell in cage for nb in neighbours(*cell, n, n) if owner[nb[0]][nb[1]] == -1]
            if not free:
                break
            nb = rng.choice(free)
            owner[nb[0]][nb[1]] = len(cages)
            cage.append(nb)
        cages.append(sorted(cage))
    out = []
    for cage in cages:
        values = [sol[r][c] for r, c in cage]
        if len(cage) == 1:
            op = "="
        elif len(cage) == 2:
            op = rng.choice(["+", "-", "*"] + (["/", "/"] if max(values) % min(values) == 0 else []))
        else:
            op = rng.choice(["+", "*"])
        out.append({"cells": [list(cell) for cell in cage], "op": op, "target": combine(op, values)})
    return out


def _model(n: int, cages: list[dict[str, Any]]):
    model, x = latin_model(n)
    for cage in cages:
        cells = [tuple(cell) for cell in cage["cells"]]
        rows = [
            values
            for values in itertools.product(range(1, n + 1), repeat=len(cells))
            if combine(cage["op"], list(values)) == cage["target"]
            and not any(
                values[i] == values[j] and (a[0] == b[0] or a[1] == b[1])
                for (i, a), (j, b) in itertools.combinations(enumerate(cells), 2)
            )
        ]
        model.table([x[r][c] for r, c in cells], rows)
    return model, x


def _solutions(n: int, cages: list[dict[str, Any]], limit: int = 2) -> list[list[list[int]]]:
    model, x = _model(n, cages)
    with model.session() as s:
        return [decode(x, true) for true in s.solutions(all_vars(x), limit=limit)]


class Calcudoku(LogicTask):
    name = "calcudoku"
    description = "Fill a latin square whose cages must reach their targets with +, -, *, /."
    levels = {d: f"{n}x{n} grid, cages of 1-4 cells" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        sol = random_latin(rng, n)
        cages = random_cages(rng, sol)
        while len(found := _solutions(n, cages)) > 1:
            other = next(g for g in found if g != sol)
            differ = [(r, c) for r in range(n) for c in range(n) if other[r][c] != sol[r][c]]
            r, c = rng.choice(differ)
            split = next(cage for cage in cages if [r, c] in cage["cells"])
            cages.remove(split)
            cages += [
                {"cells": [cell], "op": "=", "target": sol[cell[0]][cell[1]]} for cell in split["cells"]
            ]
        cages.sort(key=lambda cage: cage["cells"][0])
        puzzle = {"n": n, "cages": cages, "solution": sol}
        return LogicInstance(self.name, difficulty, seed, self._prompt(puzzle), render(sol), puzzle)

    def _prompt(self, p: dict[str, Any]) -> str:
        n = p["n"]
        names = (string.ascii_uppercase + string.ascii_lowercase)[: len(p["cages"])]
        layout = [["?"] * n for _ in range(n)]
        rules = []
        for name, cage in zip(names, p["cages"], strict=True):
            for r, c in cage["cells"]:
                layout[r][c] = name
            op = {"=": "", "+": "+", "-": "-", "*": "*", "/": "/"}[cage["op"]]
            cells = ", ".join(f"({r + 1},{c + 1})" for r, c in cage["cells"])
            rules.append(f"{name}: {cage['target']}{op}  cells {cells}")
        return (
            f"Solve this {n}x{n} Calcudoku. Fill the grid with numbers 1-{n} so that each row and each column "
            f"contains every number exactly once. The grid is divided into cages (letters below). The numbers "
            "in a cage combine with the cage's operation to give its target: + sum, * product, - difference "
            "of the two numbers (larger minus smaller), / quotient (larger divided by smaller); a cage with "
            f"no operation is a single cell holding its target.\n\nCages:\n{render(layout)}\n\n"
            + "\n".join(rules)
            + f"\n\nAnswer with the completed grid: {n} lines of {n} numbers separated by spaces. "
            + ANSWER_FORMAT
        )

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n"]
        grid = parse_int_grid(answer, n, n)
        violations = latin_violations(grid)
        for cage in puzzle["cages"] if not violations else []:  # cages are judged on values 1..n only
            values = [grid[r][c] for r, c in cage["cells"]]
            if combine(cage["op"], values) != cage["target"]:
                r, c = cage["cells"][0]
                violations.append(
                    f"cage at ({r + 1},{c + 1}) gives {values}, not {cage['target']}{cage['op']}"
                )
        return grid_result(diff_cells(grid, puzzle["solution"]) if violations else [], violations)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return sum(len(cage["cells"]) for cage in puzzle["cages"] if cage["op"] != "=")

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        n = instance.puzzle["n"]
        grid = [row[:] for row in instance.puzzle["solution"]]
        r, c = divmod(seed % (n * n), n)
        grid[r][c] = grid[r][c] % n + 1
        return render(grid)

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        return len(_solutions(puzzle["n"], puzzle["cages"], limit))


TASK = Calcudoku()
