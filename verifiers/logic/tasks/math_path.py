"""Math path: an equation with some operands blanked out as '?'. Fill every blank with a digit 1-9 so
the equation holds (usual precedence: * and / before + and -). Any valid filling scores 1."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from verifiers.logic.arith import NORMALISE, evaluate
from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.textutil import SEPARATORS, integers, parse_int, scan, strip_wrapping


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
        slots, operators = puzzle["operands"], puzzle["operators"]
        blanks = [k for k, n in enumerate(slots) if n is None]
        # The completed equation ("4 * 2 + 2 = 10"), the equation without "= result", or just the digits
        # for the blanks ("4, 2"); the equation must be the puzzle's own, operators and result included.
        text = strip_wrapping(answer.translate(NORMALISE)).strip("`$")
        tokens = scan(text, r"\d+|[-+*/=]", SEPARATORS, "the completed equation")
        if not any(t in "+-*/=" for t in tokens):
            if len(tokens) != len(blanks):
                raise ParseError(f"expected {len(blanks)} digits for the blanks, found {len(tokens)} numbers")
            filled = list(slots)
            for k, t in zip(blanks, tokens, strict=True):
                filled[k] = parse_int(t)
        else:
            left, equals, right = _split_equation(tokens)
            if equals and (len(right) != 1 or not right[0].isdigit()):
                raise ParseError("expected one number after '='")
            if equals and parse_int(right[0]) != puzzle["result"]:
                return 0.0, {
                    "correct": False,
                    "reason": "the right-hand side was changed",
                    "right_side": right[0],
                }
            if len(left) != 2 * len(slots) - 1 or not all(
                t.isdigit() == (k % 2 == 0) for k, t in enumerate(left)
            ):
                raise ParseError(
                    f"expected the equation with {len(slots)} numbers and {len(operators)} operators"
                )
            if left[1::2] != operators:
                return 0.0, {"correct": False, "reason": "an operator was changed"}
            filled = [parse_int(t) for t in left[::2]]
            fixed_wrong = [k for k, n in enumerate(slots) if n is not None and filled[k] != n]
            if fixed_wrong:
                return 0.0, {
                    "correct": False,
                    "reason": "a given number was changed",
                    "operand": fixed_wrong[0] + 1,
                }
        bad = [k for k in blanks if not 1 <= filled[k] <= 9]
        if bad:
            return 0.0, {"correct": False, "reason": "a blank is not a digit 1-9", "operand": bad[0] + 1}
        value = evaluate(_join(filled, operators)).value  # digits 1-9 never divide by zero
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


def _split_equation(tokens: list[str]) -> tuple[list[str], bool, list[str]]:
    """Tokens left of '=', whether there is one, and the tokens right of it."""
    if tokens.count("=") > 1:
        raise ParseError("more than one '=' in the equation")
    if "=" not in tokens:
        return tokens, False, []
    k = tokens.index("=")
    return tokens[:k], True, tokens[k + 1 :]


def _join(operands: list[Any], operators: list[str]) -> str:
    parts = [str(operands[0])]
    for op, n in zip(operators, operands[1:], strict=True):
        parts += [op, str(n)]
    return " ".join(parts)


TASK = MathPath()
