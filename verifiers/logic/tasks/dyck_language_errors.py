"""Dyck language errors: find the first bracket that breaks a sequence (0 when it is well nested)."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, exact_result
from verifiers.logic.dyck import PAIRS, first_error, random_dyck
from verifiers.logic.textutil import one_integer

CLOSE = list(PAIRS.values())


class DyckLanguageErrors(LogicTask):
    name = "dyck_language_errors"
    description = "Locate the first mismatched or unmatched closing bracket in a sequence (0 if none)."
    levels = {
        1: "2 bracket types, 10 brackets",
        2: "3 types, 16 brackets",
        3: "4 types, 24 brackets",
        4: "4 types, 32 brackets, deeper nesting",
        5: "4 types, 44 brackets, deeper nesting",
        6: "4 types, 60 brackets, deeper nesting",
    }
    sizes = {1: (10, 2, 3), 2: (16, 3, 4), 3: (24, 4, 5), 4: (32, 4, 7), 5: (44, 4, 9), 6: (60, 4, 12)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        length, types, depth = self.sizes[difficulty]
        word = list(random_dyck(rng, length, types, depth))
        kinds = CLOSE[:types]
        if rng.random() < 0.8:  # one error: a closer of the wrong kind, or a stray closer
            if rng.random() < 0.5:
                k = rng.choice([i for i, c in enumerate(word) if c in CLOSE])
                word[k] = rng.choice([c for c in kinds if c != word[k]] or CLOSE[1:2])
            else:
                k = rng.randrange(len(word) + 1)
                word.insert(k, rng.choice(kinds))
        seq = "".join(word)
        answer = first_error(seq)
        prompt = (
            "A bracket sequence is well nested when every closing bracket closes the most recent unclosed "
            f"opening bracket of the same kind. Sequence (positions numbered from 1):\n{' '.join(seq)}\n\n"
            "Give the position of the first closing bracket that breaks this rule (it closes the wrong kind, "
            f"or nothing is open), or 0 if there is none. Unclosed brackets at the end are not errors. {ANSWER_FORMAT} "
            "Example: <answer>7</answer>"
        )
        puzzle = {"sequence": seq, "first_error": answer, "length": length}
        return LogicInstance(self.name, difficulty, seed, prompt, str(answer), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        got = one_integer(answer, zero=r"none|no error|valid|well[- ]nested", what="position")
        return exact_result(got, puzzle["first_error"])

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["length"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        return str(int(instance.answer) + random.Random(seed).randint(1, 3))


TASK = DyckLanguageErrors()
