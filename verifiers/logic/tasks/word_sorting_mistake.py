"""Word sorting mistake: an insertion-sort trace may contain one wrong step; name the first wrong
step (0 when the trace is correct). Steps after a mistake continue correctly from the wrong list."""

from __future__ import annotations

import bisect
import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, exact_result
from verifiers.logic.textutil import one_integer, pick_words


class WordSortingMistake(LogicTask):
    name = "word_sorting_mistake"
    description = "Find the first wrong step of an insertion-sort trace over words (0 if none)."
    levels = {
        1: "4 words",
        2: "6 words",
        3: "8 words, shared initials",
        4: "10 words, shared initials",
        5: "13 words, shared initials",
        6: "16 words, shared initials",
    }
    sizes = {1: (4, False), 2: (6, False), 3: (8, True), 4: (10, True), 5: (13, True), 6: (16, True)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, clustered = self.sizes[difficulty]
        words = pick_words(rng, count, clustered)
        mistake = rng.randint(2, count) if rng.random() < 0.8 else 0
        current: list[str] = []
        steps: list[str] = []
        for k, word in enumerate(words, 1):
            pos = bisect.bisect(current, word)
            if k == mistake:  # insert one place off; always leaves the list out of order
                pos = pos - 1 if pos == len(current) or (pos > 0 and rng.random() < 0.5) else pos + 1
            current.insert(pos, word)
            steps.append(f"Step {k}: insert '{word}' -> {' '.join(current)}")
        trace = "\n".join(steps)
        prompt = (
            f"Someone sorts these words alphabetically by insertion sort: {' '.join(words)}\n"
            "Each step inserts the next word into the list built so far:\n"
            f"{trace}\n\nWhich step is the first one whose list is wrong? Give the step number, or 0 if every "
            f"step is correct. {ANSWER_FORMAT} Example: <answer>3</answer>"
        )
        puzzle = {"words": words, "first_mistake": mistake}
        return LogicInstance(self.name, difficulty, seed, prompt, str(mistake), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        got = one_integer(answer, zero=r"none|no mistake|no error|correct", what="step number")
        return exact_result(got, puzzle["first_mistake"])

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["words"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        want = int(instance.answer)
        n = len(instance.puzzle["words"])
        return str(random.Random(seed).choice([k for k in range(n + 1) if k != want]))


TASK = WordSortingMistake()
