"""Arrow maze (SynLogic's arrow_maze): fill every blank with one of eight arrows. A number is the start
of straight "rays" of arrows: in each direction, the run of arrows next to it that all point away from it
in that direction. The arrows in all rays of a number must add up to the number, and every arrow must lie
on some number's ray. Many fillings can be valid, so the verifier checks these rules."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.grids import grid_result, inside, parse_grid, render

ARROWS = {
    "↑": (-1, 0),
    "↓": (1, 0),
    "←": (0, -1),
    "→": (0, 1),
    "↖": (-1, -1),
    "↗": (-1, 1),
    "↘": (1, 1),
    "↙": (1, -1),
}
SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9}


def ray_length(grid: list[list[str]], r: int, c: int, arrow: str) -> int:
    dr, dc = ARROWS[arrow]
    n, m, k = len(grid), len(grid[0]), 0
    while (
        inside(r + (k + 1) * dr, c + (k + 1) * dc, n, m) and grid[r + (k + 1) * dr][c + (k + 1) * dc] == arrow
    ):
        k += 1
    return k


def covered(grid: list[list[str]], r: int, c: int) -> bool:
    """Walking back against the arrow over equal arrows reaches a number."""
    dr, dc = ARROWS[grid[r][c]]
    while True:
        r, c = r - dr, c - dc
        if not inside(r, c, len(grid), len(grid[0])):
            return False
        if grid[r][c].isdigit():
            return True
        if grid[r][c] != grid[r + dr][c + dc]:
            return False


def random_maze(rng: random.Random, n: int) -> list[list[str]]:
    """Grow rays from random numbers until every cell is a number or an arrow on a ray."""
    grid = [[""] * n for _ in range(n)]
    for r, c in rng.sample([(r, c) for r in range(n) for c in range(n)], max(1, n * n // 8)):
        grid[r][c] = "#"
    while True:
        blank = [(r, c) for r in range(n) for c in range(n) if not grid[r][c]]
        if not blank:
            break
        rng.shuffle(blank)
        grew = False
        for r, c in blank:
            options = [
                a
                for a, (dr, dc) in ARROWS.items()
                if inside(r - dr, c - dc, n, n) and grid[r - dr][c - dc] in ("#", a)
            ]
            if options:
                grid[r][c] = rng.choice(options)
                grew = True
        if not grew:
            r, c = rng.choice(blank)
            grid[r][c] = "#"
    for r in range(n):
        for c in range(n):
            if grid[r][c] == "#":
                grid[r][c] = str(sum(ray_length(grid, r, c, a) for a in ARROWS))
    return grid


class ArrowMaze(LogicTask):
    name = "arrow_maze"
    description = "Fill blanks with arrows so each number counts the arrows on the rays leaving it."
    levels = {d: f"{n}x{n} grid" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        sol = random_maze(rng, n)
        maze = [[v if v.isdigit() else "X" for v in row] for row in sol]
        prompt = (
            f"Arrow maze on a {n}x{n} grid. X is a blank cell; a number is the start of arrow rays.\n\n"
            f"{render(maze)}\n\n"
            "Fill every X with one of the arrows ↑ ↓ ← → ↖ ↗ ↘ ↙. From a number, a ray in a direction is the "
            "unbroken line of cells right next to it in that direction whose arrows all point in that same "
            "direction (away from the number). The total number of arrows in all rays leaving a number must "
            "equal that number, and every arrow must belong to a ray of some number.\n"
            f"Answer with the completed grid: {n} lines of {n} entries separated by spaces (the numbers stay "
            "as they are). " + ANSWER_FORMAT
        )
        return LogicInstance(self.name, difficulty, seed, prompt, render(sol), {"n": n, "maze": maze})

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n, maze = puzzle["n"], puzzle["maze"]
        grid = parse_grid(answer, n, n, r"\d+|[" + "".join(ARROWS) + "]")
        wrong, broken = [], []
        for r in range(n):
            for c in range(n):
                if maze[r][c].isdigit() and grid[r][c] != maze[r][c]:
                    wrong.append([r + 1, c + 1])
                    broken.append(f"number at ({r + 1},{c + 1}) changed")
                elif not maze[r][c].isdigit() and grid[r][c] not in ARROWS:
                    raise ParseError(f"cell ({r + 1},{c + 1}) holds {grid[r][c]!r}, not an arrow")
        if broken:
            return grid_result(wrong, broken)
        for r in range(n):
            for c in range(n):
                if maze[r][c].isdigit():
                    got = sum(ray_length(grid, r, c, a) for a in ARROWS)
                    if got != int(maze[r][c]):
                        broken.append(
                            f"number {maze[r][c]} at ({r + 1},{c + 1}) has {got} arrows on its rays"
                        )
                elif not covered(grid, r, c):
                    wrong.append([r + 1, c + 1])
                    broken.append(f"arrow at ({r + 1},{c + 1}) is on no number's ray")
        return grid_result(wrong, broken)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return sum(not v.isdigit() for row in puzzle["maze"] for v in row)

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        n = instance.puzzle["n"]
        grid = parse_grid(instance.answer, n, n, r"\d+|[" + "".join(ARROWS) + "]")
        blanks = [(r, c) for r in range(n) for c in range(n) if grid[r][c] in ARROWS]
        r, c = blanks[seed % len(blanks)]
        arrows = list(ARROWS)
        grid[r][c] = arrows[(arrows.index(grid[r][c]) + 1 + seed % 7) % 8]
        return render(grid)


TASK = ArrowMaze()
