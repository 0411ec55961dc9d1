"""Boolean satisfiability: find an assignment that satisfies a 3-CNF formula. The formula is planted
around a hidden assignment, with one clause per variable that only that variable satisfies, so every
instance is satisfiable and no variable is free. Any satisfying assignment scores 1."""

from __future__ import annotations

import re
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError, flip_one_part
from verifiers.logic.textutil import SEPARATORS, no_repeats, parse_int, scan

Clause = list[int]  # DIMACS-style literals: +i is x_i, -i is NOT x_i
# One "x3=True" (also x_3: true, x3 is F, x3 -> 1); the lookarounds keep "x3=Tx" from reading as x3=T.
_PAIR = re.compile(
    r"(?i)(?<![a-z0-9_])x_?(\d+)\s*(?:=|:|\bis\b|->)\s*(true|false|t|f|1|0)(?![a-z0-9_])", re.ASCII
)


class BooleanSat(LogicTask):
    name = "boolean_sat"
    description = "Find a satisfying assignment of a 3-CNF formula (any satisfying one counts)."
    levels = {
        1: "4 variables, 3-literal clauses, ratio 3",
        2: "6 variables, ratio 3.5",
        3: "8 variables, ratio 4",
        4: "10 variables, ratio 4.2",
        5: "13 variables, ratio 4.2",
        6: "16 variables, ratio 4.3",
    }
    sizes = {1: (4, 3.0), 2: (6, 3.5), 3: (8, 4.0), 4: (10, 4.2), 5: (13, 4.2), 6: (16, 4.3)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, ratio = self.sizes[difficulty]
        hidden = {v: rng.random() < 0.5 for v in range(1, n + 1)}

        def lit(v: int, true: bool) -> int:  # a literal over v that is true/false under the hidden assignment
            return v if hidden[v] == true else -v

        clauses: list[Clause] = []
        for v in range(1, n + 1):  # v is the only true literal: flipping v breaks this clause
            a, b = rng.sample([u for u in range(1, n + 1) if u != v], 2)
            clauses.append([lit(v, True), lit(a, False), lit(b, False)])
        while len(clauses) < round(ratio * n):
            vs = rng.sample(range(1, n + 1), 3)
            signs = [rng.random() < 0.5 for _ in vs]
            if not any(hidden[v] == s for v, s in zip(vs, signs, strict=True)):
                signs[rng.randrange(3)] ^= True  # planted: at least one literal is true
            clauses.append([v if s else -v for v, s in zip(vs, signs, strict=True)])
        rng.shuffle(clauses)
        formula = " AND ".join("(" + " OR ".join(_name(x) for x in c) + ")" for c in clauses)
        prompt = (
            f"Find values for the Boolean variables x1..x{n} that make this formula true:\n{formula}\n\n"
            "Give every variable, as comma-separated pairs like x1=True. "
            f"{ANSWER_FORMAT} Example: <answer>x1=True, x2=False, ...</answer>"
        )
        answer = ", ".join(f"x{v}={hidden[v]}" for v in range(1, n + 1))
        puzzle = {"n_vars": n, "clauses": clauses}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n_vars"]
        pairs = [
            _PAIR.fullmatch(token).groups()
            for token in scan(answer, _PAIR.pattern, SEPARATORS, "a list of x<i>=True/False pairs")
        ]
        if not pairs:
            return 0.0, {"error": "parse error: no 'x<i>=True/False' pairs found"}
        no_repeats([parse_int(var) for var, _ in pairs], "the variable x")
        values = {parse_int(var): val.lower() in ("true", "t", "1") for var, val in pairs}
        unknown = sorted(v for v in values if not 1 <= v <= n)
        if unknown:
            raise ParseError(f"the formula has no variable x{unknown[0]}")
        missing = [f"x{v}" for v in range(1, n + 1) if v not in values]
        if missing:
            return 0.0, {"correct": False, "reason": "variables without a value", "missing": missing}
        for k, clause in enumerate(puzzle["clauses"]):
            if not _satisfied(clause, values):
                return 0.0, {
                    "correct": False,
                    "reason": "clause not satisfied",
                    "clause": k + 1,
                    "text": " OR ".join(_name(x) for x in clause),
                }
        return 1.0, {"correct": True}

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["n_vars"] * len(puzzle["clauses"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """Flip one variable of the planted assignment; its private clause then fails."""
        return flip_one_part(
            instance.answer,
            seed,
            lambda p: p.replace("True", "X").replace("False", "True").replace("X", "False"),
        )


def _satisfied(clause: Clause, values: dict[int, bool]) -> bool:
    return any(values[abs(x)] == (x > 0) for x in clause)


def _name(x: int) -> str:
    return f"x{x}" if x > 0 else f"NOT x{-x}"


TASK = BooleanSat()
