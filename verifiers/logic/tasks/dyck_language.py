"""Dyck language completion: close every open bracket of a prefix in the right order."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.dyck import PAIRS, closing, random_dyck
from verifiers.logic.textutil import first_difference, scan


class DyckLanguage(LogicTask):
    name = "dyck_language"
    description = "Complete a bracket sequence so that every bracket is closed properly."
    levels = {
        1: "1 bracket type, 8 brackets",
        2: "2 types, 12 brackets",
        3: "3 types, 18 brackets",
        4: "4 types, 24 brackets",
        5: "4 types, 32 brackets, deeper nesting",
        6: "4 types, 44 brackets, deeper nesting",
    }
    sizes = {1: (8, 1, 3), 2: (12, 2, 4), 3: (18, 3, 5), 4: (24, 4, 6), 5: (32, 4, 8), 6: (44, 4, 10)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        length, types, depth = self.sizes[difficulty]
        word = random_dyck(rng, length, types, depth)
        # cut where at least two brackets (one at level 1) are open, as late as possible on average
        depths, d = [], 0
        for c in word:
            d += 1 if c in PAIRS else -1
            depths.append(d)
        need = min(2, max(depths))
        cuts = [i + 1 for i, x in enumerate(depths) if x >= need and i >= len(word) // 2] or [
            i + 1 for i, x in enumerate(depths) if x >= need
        ]
        cut = rng.choice(cuts)
        prefix = word[:cut]
        answer = " ".join(closing(prefix))
        prompt = (
            "Complete the bracket sequence so that every bracket is closed properly (matching kinds, "
            f"innermost first). Sequence:\n{' '.join(prefix)}\n\n"
            f"Give only the closing brackets that must follow, separated by spaces. {ANSWER_FORMAT} "
            "Example: for '( [' answer <answer>] )</answer>"
        )
        puzzle = {"prefix": prefix, "length": length}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        got = "".join(scan(answer, r"[()\[\]{}<>]", r"\s,", "a sequence of brackets"))
        if not got:
            return 0.0, {"error": "parse error: the answer contains no brackets"}
        prefix, want = puzzle["prefix"], closing(puzzle["prefix"])
        if got.startswith(prefix) and len(got) > len(want):  # the whole completed sequence was given
            got = got[len(prefix) :]
        if got == want:
            return 1.0, {"correct": True}
        i = first_difference(got, want)
        return 0.0, {
            "correct": False,
            "first_wrong": i + 1,
            "expected_length": len(want),
            "got_length": len(got),
        }

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["length"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        rng = random.Random(seed)
        parts = instance.answer.split()
        k = rng.randrange(len(parts))
        parts[k] = rng.choice([c for c in PAIRS.values() if c != parts[k]])
        return " ".join(parts)


TASK = DyckLanguage()
