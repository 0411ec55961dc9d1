"""Number wall (addition pyramid): every brick is the sum of the two bricks below it. Some bricks are
given; the generator reveals bricks until the bottom row, and so the whole wall, is uniquely determined
(the revealed bricks are linear in the bottom row, so uniqueness is a rank condition)."""

from __future__ import annotations

import random
from math import comb
from typing import Any

import numpy as np

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.grids import GRID_SEPARATORS
from verifiers.logic.textutil import integers, parse_int, scan


def build_wall(bottom: list[int]) -> list[list[int]]:
    """Rows from the bottom (index 0) up to the single top brick."""
    rows = [list(bottom)]
    while len(rows[-1]) > 1:
        below = rows[-1]
        rows.append([below[i] + below[i + 1] for i in range(len(below) - 1)])
    return rows


def _brick_row(r: int, i: int, width: int) -> list[int]:
    """Brick i of row r (from the bottom) as a combination of the bottom row: binomial coefficients."""
    return [comb(r, j - i) if 0 <= j - i <= r else 0 for j in range(width)]


class NumberWall(LogicTask):
    name = "number_wall"
    description = "Complete an addition pyramid where each brick is the sum of the two below it."
    levels = {
        1: "bottom row of 3 bricks (6 in all), values 1-9",
        2: "bottom row of 4 (10 bricks), values 1-9",
        3: "bottom row of 5 (15 bricks), values 1-12",
        4: "bottom row of 6 (21 bricks), values 1-15",
        5: "bottom row of 7 (28 bricks), values 1-20",
        6: "bottom row of 8 (36 bricks), values 1-20",
    }
    sizes = {1: (3, 9), 2: (4, 9), 3: (5, 12), 4: (6, 15), 5: (7, 20), 6: (8, 20)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        width, top = self.sizes[difficulty]
        bottom = [rng.randint(1, top) for _ in range(width)]
        wall = build_wall(bottom)
        cells = [(r, i) for r in range(width) for i in range(width - r)]
        rng.shuffle(cells)
        given: list[tuple[int, int]] = []
        rows: list[list[int]] = []
        for r, i in cells:  # reveal bricks that add information until the bottom row is determined
            row = _brick_row(r, i, width)
            if np.linalg.matrix_rank(np.array(rows + [row], dtype=float)) > len(rows):
                rows.append(row)
                given.append((r, i))
                if len(rows) == width:
                    break
        shown = [[wall[r][i] if (r, i) in given else None for i in range(width - r)] for r in range(width)]
        lines = [
            " ".join("?" if v is None else str(v) for v in shown[r]).center(4 * width)
            for r in reversed(range(width))
        ]
        prompt = (
            "In this number wall each brick is the sum of the two bricks directly below it. Rows are listed "
            "from the top brick down to the bottom row; ? marks an unknown brick.\n\n"
            + "\n".join(line.rstrip() for line in lines)
            + f"\n\nFind the bottom row ({width} numbers, left to right), separated by spaces. "
            f"{ANSWER_FORMAT} Example: <answer>{' '.join(str(k + 1) for k in range(width))}</answer>"
        )
        puzzle = {"width": width, "shown": shown}
        return LogicInstance(self.name, difficulty, seed, prompt, " ".join(map(str, bottom)), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        width, shown = puzzle["width"], puzzle["shown"]
        rows = [scan(line, r"-?\d+", GRID_SEPARATORS, "a row of numbers") for line in answer.splitlines()]
        rows = [row for row in rows if row]
        if len(rows) > 1 and [len(row) for row in rows] != list(range(1, width + 1)):
            raise ParseError(f"expected the bottom row, or the whole wall as {width} rows from the top")
        nums = [parse_int(t) for row in rows for t in row]
        n_all = width * (width + 1) // 2
        if len(nums) == width:
            bottom = nums
        elif len(nums) == n_all:  # the whole wall, top row first: check it is a wall, then use its base
            bottom = nums[-width:]
            flat_top_down = [v for r in reversed(range(width)) for v in build_wall(bottom)[r]]
            if flat_top_down != nums:
                return 0.0, {"correct": False, "reason": "the submitted wall breaks the sum rule"}
        else:
            return 0.0, {
                "error": f"parse error: expected {width} numbers (the bottom row), found {len(nums)}"
            }
        wall = build_wall(bottom)
        for r in range(width):
            for i, v in enumerate(shown[r]):
                if v is not None and wall[r][i] != v:
                    return 0.0, {
                        "correct": False,
                        "reason": "a given brick does not match",
                        "row_from_bottom": r + 1,
                        "position": i + 1,
                        "expected": v,
                        "got": wall[r][i],
                    }
        return 1.0, {"correct": True}

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        """1 when the given bricks pin down the bottom row (full rank), else infinitely many (limit)."""
        width = puzzle["width"]
        rows = [
            _brick_row(r, i, width)
            for r in range(width)
            for i, v in enumerate(puzzle["shown"][r])
            if v is not None
        ]
        return 1 if np.linalg.matrix_rank(np.array(rows, dtype=float)) == width else limit

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(sum(v is None for row in puzzle["shown"] for v in row))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        rng = random.Random(seed)
        nums = integers(instance.answer)
        k = rng.randrange(len(nums))
        nums[k] += rng.choice([-1, 1]) * rng.randint(1, 3)
        return " ".join(map(str, nums))


TASK = NumberWall()
