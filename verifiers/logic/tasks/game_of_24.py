"""Game of 24: combine all the given numbers with + - * / and parentheses to reach the target.

Any correct expression scores 1; it is evaluated exactly (fractions) through ``ast``, never ``eval``."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.arith import change_one_number, score_expression, solve
from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask

TARGET = 24
SEARCH_BUDGET = 3000  # solver nodes; 4 numbers never need more than ~700


class GameOf24(LogicTask):
    name = "game_of_24"
    description = "Use each given number exactly once with + - * / and parentheses to make 24."
    levels = {
        1: "4 numbers from 1-6",
        2: "4 numbers from 1-9",
        3: "4 numbers from 1-13",
        4: "5 numbers from 1-13",
        5: "5 numbers from 1-20",
        6: "6 numbers from 1-25",
    }
    sizes = {1: (4, 6), 2: (4, 9), 3: (4, 13), 4: (5, 13), 5: (5, 20), 6: (6, 25)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, top = self.sizes[difficulty]
        while True:  # most draws are solvable; the solver proves it (rare slow searches are redrawn)
            numbers = sorted(rng.randint(1, top) for _ in range(count))
            expr, nodes = solve(numbers, TARGET, max_nodes=SEARCH_BUDGET)
            if expr:
                break
        prompt = (
            f"Use the numbers {', '.join(map(str, numbers))} to make {TARGET}. Use each number exactly once, "
            "combined with +, -, *, / and parentheses; fractions are allowed in intermediate steps. "
            f"Write the expression only. {ANSWER_FORMAT} Example: <answer>(1 + 2) * (3 + 5)</answer>"
        )
        puzzle = {"numbers": numbers, "target": TARGET, "max_value": top, "solver_nodes": nodes}
        return LogicInstance(self.name, difficulty, seed, prompt, expr, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        return score_expression(answer, puzzle["numbers"], puzzle["target"])

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["numbers"]) * puzzle["max_value"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        return change_one_number(instance.answer, random.Random(seed))


TASK = GameOf24()
