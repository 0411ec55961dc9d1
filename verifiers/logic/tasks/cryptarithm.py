"""Cryptarithm (alphametic addition): letters stand for distinct digits, no word starts with 0, and the
sum holds. The generator keeps only puzzles whose digit assignment its solver proves unique."""

from __future__ import annotations

import random
import re
import string
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.textutil import SEPARATORS, no_repeats, scan

# One "A=1" (also a: 1, A -> 1, A is 1); a digit is one character, so "A=12" is not a pair.
_PAIR = re.compile(r"(?i)(?<![a-z0-9])([a-z])\s*(?:=|:|->|→|\bis\b)\s*(\d)(?![a-z0-9])", re.ASCII)


def solve(
    addends: list[str], result: str, fixed: dict[str, int] | None = None, limit: int = 2
) -> tuple[list[dict[str, int]], int]:
    """Up to ``limit`` solutions and the number of search nodes. Column-wise from the right: the letters
    of the addends in a column are tried, then the result letter is forced by the column sum.
    ``fixed`` letters (hints) keep their digit."""
    cols = len(result)
    leading = {w[0] for w in [*addends, result] if len(w) > 1}
    column_letters = [[w[-1 - c] for w in addends if len(w) > c] for c in range(cols)]
    assign: dict[str, int] = {}
    used = [False] * 10
    solutions: list[dict[str, int]] = []
    nodes = 0
    for letter, digit in (fixed or {}).items():
        assign[letter] = digit
        used[digit] = True

    def place(letter: str, digit: int) -> bool:
        if used[digit] or (digit == 0 and letter in leading):
            return False
        assign[letter] = digit
        used[digit] = True
        return True

    def unplace(letter: str) -> None:
        used[assign.pop(letter)] = False

    def column(c: int, k: int, total: int) -> None:
        nonlocal nodes
        nodes += 1
        if len(solutions) >= limit:
            return
        if c == cols:
            if total == 0:
                solutions.append(dict(assign))
            return
        letters = column_letters[c]
        if k < len(letters):
            letter = letters[k]
            if letter in assign:
                column(c, k + 1, total + assign[letter])
                return
            for d in range(10):
                if place(letter, d):
                    column(c, k + 1, total + d)
                    unplace(letter)
            return
        digit, carry = total % 10, total // 10
        r = result[-1 - c]
        if r in assign:
            if assign[r] == digit:
                column(c + 1, 0, carry)
        elif place(r, digit):
            column(c + 1, 0, carry)
            unplace(r)

    column(0, 0, 0)
    return solutions, nodes


def _draw(
    rng: random.Random, count: int, digits: int
) -> tuple[list[str], str, list[dict[str, int]], dict[str, int], int]:
    """Random addends, their letter code, and the hints (letters two solutions disagree on, revealed
    one at a time) that make the assignment unique."""
    numbers = [rng.randint(10 ** (digits - 1), 10**digits - 1) for _ in range(count)]
    letters = rng.sample(string.ascii_uppercase, 10)
    code = str.maketrans("0123456789", "".join(letters))
    addends = [str(n).translate(code) for n in numbers]
    result = str(sum(numbers)).translate(code)
    gold = {letters[int(d)]: int(d) for d in "".join(map(str, [*numbers, sum(numbers)]))}
    hints: dict[str, int] = {}
    while True:
        solutions, nodes = solve(addends, result, hints)
        if len(solutions) == 1:
            return addends, result, solutions, hints, nodes
        ambiguous = sorted(c for c in solutions[0] if solutions[0][c] != solutions[1][c])
        letter = rng.choice(ambiguous)
        hints[letter] = gold[letter]


class Cryptarithm(LogicTask):
    name = "cryptarithm"
    description = "Find the unique digit for each letter in an alphametic addition."
    levels = {
        1: "2-digit + 2-digit",
        2: "3-digit + 3-digit",
        3: "4-digit + 4-digit",
        4: "5-digit + 5-digit",
        5: "6-digit + 6-digit",
        6: "three 5-digit addends",
    }
    sizes = {1: (2, 2), 2: (2, 3), 3: (2, 4), 4: (2, 5), 5: (2, 6), 6: (3, 5)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, digits = self.sizes[difficulty]
        # Small sums rarely have a unique assignment: of a few draws keep the one that needs the fewest
        # revealed letters (hints) before the solver proves the rest unique.
        best = None
        for _ in range(4):
            draw = _draw(rng, count, digits)
            if best is None or len(draw[3]) < len(best[3]):
                best = draw
            if not best[3]:
                break
        addends, result, solutions, hints, nodes = best
        hints = dict(sorted(hints.items()))
        mapping = dict(sorted(solutions[0].items()))
        equation = " + ".join(addends) + f" = {result}"
        given = f" You are told that {', '.join(f'{k}={v}' for k, v in hints.items())}." if hints else ""
        prompt = (
            f"Solve the cryptarithm {equation}. Each letter stands for a different digit, the same letter "
            f"always for the same digit, and no number starts with 0.{given} The solution is unique.\n"
            f"Give every letter's digit as LETTER=DIGIT pairs separated by commas. {ANSWER_FORMAT} "
            "Example format: <answer>A=1, B=2, C=3</answer>"
        )
        answer = ", ".join(f"{k}={v}" for k, v in mapping.items())
        puzzle = {"addends": addends, "result": result, "hints": hints, "solver_nodes": nodes}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        words = [*puzzle["addends"], puzzle["result"]]
        letters = sorted(set("".join(words)))
        tokens = scan(answer, _PAIR.pattern, SEPARATORS, "a list of LETTER=DIGIT pairs")
        if not tokens:
            return 0.0, {"error": "parse error: no LETTER=DIGIT pairs found"}
        pairs = [(m.group(1).upper(), int(m.group(2))) for m in map(_PAIR.fullmatch, tokens)]
        no_repeats([letter for letter, _ in pairs], "the letter")
        mapping = dict(pairs)
        unknown = sorted(set(mapping) - set(letters))
        if unknown:
            raise ParseError(f"the letter {unknown[0]} is not in the puzzle")
        missing = [c for c in letters if c not in mapping]
        if missing:
            return 0.0, {"correct": False, "reason": "letters without a digit", "missing": missing}
        contradicted = [c for c, d in puzzle["hints"].items() if mapping[c] != d]
        if contradicted:
            return 0.0, {"correct": False, "reason": "contradicts a given letter", "letter": contradicted[0]}
        used = [mapping[c] for c in letters]
        if len(set(used)) != len(used):
            dup = next(c for c in letters if used.count(mapping[c]) > 1)
            return 0.0, {"correct": False, "reason": "two letters share a digit", "letter": dup}
        zero = [w for w in words if len(w) > 1 and mapping[w[0]] == 0]
        if zero:
            return 0.0, {"correct": False, "reason": "a number starts with 0", "word": zero[0]}

        def value(w: str) -> int:
            return int("".join(str(mapping[c]) for c in w))

        total = sum(value(w) for w in puzzle["addends"])
        if total != value(puzzle["result"]):
            return 0.0, {
                "correct": False,
                "reason": "the sum does not hold",
                "left": total,
                "right": value(puzzle["result"]),
            }
        return 1.0, {"correct": True}

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        return len(solve(puzzle["addends"], puzzle["result"], puzzle["hints"], limit)[0])

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(sum(map(len, puzzle["addends"])) + len(puzzle["result"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        rng = random.Random(seed)
        pairs = re.findall(r"([A-Z])=(\d)", instance.answer)
        k = rng.randrange(len(pairs))
        letter, digit = pairs[k]
        pairs[k] = (letter, str((int(digit) + rng.randint(1, 9)) % 10))
        return ", ".join(f"{a}={b}" for a, b in pairs)


TASK = Cryptarithm()
