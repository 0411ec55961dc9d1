"""Math path: an equation with some operands blanked out as '?'. Fill every blank with a digit 1-9 so
the equation holds (usual precedence: * and / before + and -). Any valid filling scores 1."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from verifiers.logic.arith import ExprError, evaluate
from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.textutil import integers


class MathPath(LogicTask):
    name = "math_path"
    description = "Fill the '?' blanks of an equation with digits 1-9 so that it holds."
    levels = {
        1: "3 operands, 2 blanks, + and - only",
        2: "4 operands, 3 blanks, + - *",
        3: "5 operands, 4 blanks, + - *",
        4: "6 operands, 5 blanks, + - * /",
        5: "7 operands, 6 blanks, + - * /",
        6: "8 operands, 7 blanks, + - * /",
    }
    sizes = {
        1: (3, 2, "+-"),
        2: (4, 3, "+-*"),
        3: (5, 4, "+-*"),
        4: (6, 5, "+-*/"),
        5: (7, 6, "+-*/"),
        6: (8, 7, "+-*/"),
    }

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, blanks, ops = self.sizes[difficulty]
        while True:
            operands = [rng.randint(1, 9) for _ in range(count)]
            operators = [rng.choice(ops) for _ in range(count - 1)]
            value = evaluate(_join(operands, operators)).value
            if value.denominator == 1 and 0 <= value <= 200:
                break
        hidden = sorted(rng.sample(range(count), blanks))
        template = _join([("?" if k in hidden else n) for k, n in enumerate(operands)], operators)
        equation = f"{template} = {int(value)}"
        prompt = (
            f"Replace each ? with a digit from 1 to 9 (digits may repeat) so that the equation holds, using "
            f"the usual order of operations (* and / before + and -, left to right):\n{equation}\n\n"
            "Answer with the completed equation. "
            f"{ANSWER_FORMAT} Example: for '? + 2 * ? = 11' answer <answer>3 + 2 * 4 = 11</answer>"
        )
        answer = f"{_join(operands, operators)} = {int(value)}"
        puzzle = {
            "operands": [None if k in hidden else n for k, n in enumerate(operands)],
            "operators": operators,
            "result": int(value),
        }
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        slots = puzzle["operands"]
        blanks = [k for k, n in enumerate(slots) if n is None]
        # Accept the completed equation, the equation without '= result', or just the blank digits.
        nums = integers(answer.split("=")[0], signed=False)
        if len(nums) == len(slots):
            fixed_wrong = [k for k, n in enumerate(slots) if n is not None and nums[k] != n]
            if fixed_wrong:
                return 0.0, {
                    "correct": False,
                    "reason": "a given number was changed",
                    "operand": fixed_wrong[0] + 1,
                }
            filled = nums
        elif len(nums) == len(blanks):
            filled = list(slots)
            for k, n in zip(blanks, nums, strict=True):
                filled[k] = n
        else:
            return 0.0, {
                "error": f"parse error: expected {len(blanks)} digits for the blanks "
                f"(or the completed equation), found {len(nums)} numbers"
            }
        bad = [k for k in blanks if not 1 <= filled[k] <= 9]
        if bad:
            return 0.0, {"correct": False, "reason": "a blank is not a digit 1-9", "operand": bad[0] + 1}
        try:
            value = evaluate(_join(filled, puzzle["operators"])).value
        except (ExprError, ZeroDivisionError) as exc:  # pragma: no cover - digits 1-9 cannot divide by 0
            return 0.0, {"correct": False, "reason": str(exc)}
        if value != Fraction(puzzle["result"]):
            return 0.0, {
                "correct": False,
                "reason": "equation does not hold",
                "left_side": str(value),
                "right_side": puzzle["result"],
            }
        return 1.0, {"correct": True, "filled": filled}

    def measure(self, puzzle: dict[str, Any]) -> float:
        # size of the search space: 9 choices per blank
        return float(9 ** sum(n is None for n in puzzle["operands"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """Change one filled-in digit; returns a wrong equation whenever the change alters the value."""
        rng = random.Random(seed)
        puzzle = instance.puzzle
        blanks = [k for k, n in enumerate(puzzle["operands"]) if n is None]
        nums = integers(instance.answer.split("=")[0], signed=False)
        for k in rng.sample(blanks, len(blanks)):
            for d in rng.sample(range(1, 10), 9):
                trial = list(nums)
                trial[k] = d
                if evaluate(_join(trial, puzzle["operators"])).value != puzzle["result"]:
                    return f"{_join(trial, puzzle['operators'])} = {puzzle['result']}"
        raise AssertionError("every single-digit change keeps the equation true")  # impossible: + of a blank


def _join(operands: list[Any], operators: list[str]) -> str:
    parts = [str(operands[0])]
    for op, n in zip(operators, operands[1:], strict=True):
        parts += [op, str(n)]
    return " ".join(parts)


TASK = MathPath()
