"""Word sorting: put a list of words in alphabetical (or reverse alphabetical) order. Higher levels
draw words that share first letters, so more than the first letter must be compared."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.textutil import SEPARATORS, pick_words, scan, strip_wrapping


class WordSorting(LogicTask):
    name = "word_sorting"
    description = "Sort a list of words alphabetically (ascending or descending)."
    levels = {
        1: "4 words, ascending",
        2: "6 words, ascending",
        3: "8 words, ascending or descending",
        4: "12 words sharing initials, either order",
        5: "16 words sharing initials, either order",
        6: "22 words sharing initials, either order",
    }
    sizes = {
        1: (4, False, False),
        2: (6, False, False),
        3: (8, False, True),
        4: (12, True, True),
        5: (16, True, True),
        6: (22, True, True),
    }

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, clustered, either = self.sizes[difficulty]
        words = pick_words(rng, count, clustered)
        descending = either and rng.random() < 0.5
        order = "reverse alphabetical order (Z to A)" if descending else "alphabetical order (A to Z)"
        prompt = (
            f"Sort these words in {order}: {' '.join(words)}\n\n"
            f"Give the sorted words separated by spaces. {ANSWER_FORMAT} Example: <answer>apple banana cherry</answer>"
        )
        answer = " ".join(sorted(words, reverse=descending))
        puzzle = {"words": words, "descending": descending}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        text = strip_wrapping(answer)
        got = [w.lower() for w in scan(text, r"[A-Za-z]+", SEPARATORS + r".'\"`\[\]()", "a list of words")]
        if not got:
            return 0.0, {"error": "parse error: no words found"}
        unknown = [w for w in got if w not in puzzle["words"]]
        if unknown:
            raise ParseError(f"{unknown[0]!r} is not one of the words to sort")
        want = sorted(puzzle["words"], reverse=puzzle["descending"])
        if got == want:
            return 1.0, {"correct": True}
        if sorted(got) != sorted(want):
            return 0.0, {
                "correct": False,
                "reason": "not the given words",
                "missing": sorted(set(want) - set(got)),
                "unexpected": sorted(set(got) - set(want)),
            }
        i = next(k for k, (g, w) in enumerate(zip(got, want, strict=True)) if g != w)
        return 0.0, {
            "correct": False,
            "reason": "wrong order",
            "position": i + 1,
            "expected": want[i],
            "got": got[i],
        }

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["words"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        words = instance.answer.split()
        k = random.Random(seed).randrange(len(words) - 1)
        words[k], words[k + 1] = words[k + 1], words[k]
        return " ".join(words)


TASK = WordSorting()
