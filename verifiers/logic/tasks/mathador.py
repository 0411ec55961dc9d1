"""Mathador: reach the target using every drawn number exactly once, where (as in the board game)
every intermediate result must be a positive whole number. Any valid expression scores 1."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.arith import change_one_number, score_expression
from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask


class Mathador(LogicTask):
    name = "mathador"
    description = "Reach a target with all given numbers; intermediate results must be positive integers."
    levels = {
        1: "3 numbers from 1-10, target up to 50",
        2: "4 numbers from 1-12, target up to 99",
        3: "5 numbers (dice of 4, 6, 8, 12, 20 sides), target up to 99",
        4: "6 numbers from 1-20, target up to 200",
        5: "7 numbers from 1-20, target up to 500",
    }
    sizes = {1: (3, 10, 50), 2: (4, 12, 99), 3: (5, 0, 99), 4: (6, 20, 200), 5: (7, 20, 500)}
    DICE = (4, 6, 8, 12, 20)

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, top, max_target = self.sizes[difficulty]
        while True:
            if top:
                numbers = [rng.randint(1, top) for _ in range(count)]
            else:
                numbers = [rng.randint(1, sides) for sides in self.DICE]
            built = _random_tree(numbers, rng)
            if built and 10 <= built[0] <= max_target:
                break
        target, expr = built
        numbers.sort()
        prompt = (
            f"Mathador: reach {target} using all of the numbers {', '.join(map(str, numbers))}, each exactly "
            "once, with +, -, *, / and parentheses. Every intermediate result must be a positive whole "
            "number (no zero, negatives or fractions). "
            f"Write the expression only. {ANSWER_FORMAT} Example: <answer>(6 - 2) * 3 + 5</answer>"
        )
        puzzle = {"numbers": numbers, "target": target}
        return LogicInstance(self.name, difficulty, seed, prompt, expr, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        return score_expression(answer, puzzle["numbers"], puzzle["target"], positive_integers=True)

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["numbers"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        return change_one_number(instance.answer, random.Random(seed))


def _random_tree(numbers: list[int], rng: random.Random) -> tuple[int, str] | None:
    """Combine random pairs with random allowed operations until one value is left."""
    items = [(n, str(n)) for n in numbers]
    while len(items) > 1:
        i, j = rng.sample(range(len(items)), 2)
        (a, ea), (b, eb) = items[i], items[j]
        options = [(a + b, f"({ea} + {eb})"), (a * b, f"({ea} * {eb})")]
        if a > b:
            options.append((a - b, f"({ea} - {eb})"))
        if b > 1 and a % b == 0:
            options.append((a // b, f"({ea} / {eb})"))
        if a * b > 60:  # keep targets in range: large products only now and then
            options = options[:1] + options[2:] if rng.random() < 0.7 else options
        value, expr = rng.choice(options)
        items = [x for k, x in enumerate(items) if k not in (i, j)] + [(value, expr)]
    value, expr = items[0]
    return value, expr[1:-1] if expr.startswith("(") else expr


TASK = Mathador()
