"""The shape of a SynLogic-style task: a seeded generator and a rule-based verifier.

Each task lives in its own module under ``verifiers/logic/tasks/`` and defines ``TASK = SomeTask()``.
Responses are free-form: as in SynLogic, the answer is the text inside the last ``<answer>...</answer>``
after any ``</think>``.
"""

from __future__ import annotations

import json
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

ANSWER_FORMAT = "Put your final answer inside <answer></answer> tags."
# Far beyond any task's answer (the largest grid is a few hundred characters). Longer answer text is a
# parse error before any task parses it, which bounds the work a hostile response can cause.
MAX_ANSWER_CHARS = 20_000


# Greedy from the start: the match ends at the *last* tag, found in one backward scan (linear time even
# for a response of a million unclosed tags, where a lazy findall would be quadratic).
_LAST_CLOSE = re.compile(r".*</answer>", re.DOTALL | re.IGNORECASE)
_LAST_OPEN = re.compile(r".*<answer>", re.DOTALL | re.IGNORECASE)


def extract_answer(response: str) -> str | None:
    """The text of the last <answer>...</answer> block after any </think>; None when there is none."""
    if not isinstance(response, str):
        return None
    tail = response.rsplit("</think>", 1)[-1]
    close = _LAST_CLOSE.match(tail)
    if close is None:
        return None
    end = close.end() - len("</answer>")
    opening = _LAST_OPEN.match(tail, 0, end)
    return tail[opening.end() : end].strip() if opening else None


class ParseError(ValueError):
    """The answer text could not be read as the format the prompt asked for. `LogicTask.verify` turns
    it into reward 0 with an ``error: "parse error: ..."`` detail, so ``score`` may simply raise it."""


@dataclass
class LogicInstance:
    task: str
    difficulty: int
    seed: int
    prompt: str
    answer: str  # the gold answer, exactly as it may appear inside <answer></answer>
    puzzle: dict[str, Any] = field(default_factory=dict)  # the structured puzzle, JSON-serialisable

    def to_item(self, index: int = 0) -> dict[str, Any]:
        """The canonical RL item (see flows/schema.py) for this instance."""
        return {
            "id": f"{self.task}-d{self.difficulty}-s{self.seed}-{index}",
            "source": "synlogic",
            "domain": "logic",
            "task": self.task,
            "prompt": self.prompt,
            "reference": self.answer,
            "metadata": json.dumps(
                {"difficulty": self.difficulty, "seed": self.seed, "puzzle": self.puzzle}, sort_keys=True
            ),
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class LogicTask(ABC):
    """One logic task. Subclasses set the class attributes and implement generate/score/measure."""

    name: str
    description: str
    # Documented difficulty scale: level -> what it means (at least 5 levels).
    levels: dict[int, str]

    @property
    def difficulties(self) -> list[int]:
        return sorted(self.levels)

    @abstractmethod
    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        """A solvable instance (uniquely solvable where the puzzle demands it), deterministic in seed."""

    @abstractmethod
    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        """Score the extracted answer text against the puzzle: (reward in [0, 1], details).
        Unparseable answers return (0.0, {"error": "parse error: ..."})."""

    @abstractmethod
    def measure(self, puzzle: dict[str, Any]) -> float:
        """A measured difficulty quantity (solver search nodes, or instance size) that grows with level."""

    @abstractmethod
    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """A wrong answer close to the gold one (one cell, char or number changed), used by the tests
        to prove that the verifier rejects near misses."""

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int | None:
        """How many solutions the puzzle has, counted up to ``limit`` by the task's solver.

        Tasks whose rules demand a unique solution override this (the generator proves uniqueness with
        the same solver, and the tests re-check it); None means the task accepts several answers and
        its verifier checks the rules instead of comparing with the gold answer."""
        return None

    def rng(self, difficulty: int, seed: int) -> random.Random:
        """The instance's private random stream: a string seed hashes the same in every process (no
        PYTHONHASHSEED dependence) and never touches the global RNG."""
        self.check_difficulty(difficulty)
        return random.Random(f"{self.name}/{difficulty}/{seed}")

    def verify(self, puzzle: dict[str, Any], response: str) -> tuple[float, dict[str, Any]]:
        answer = extract_answer(response)
        if answer is None:
            return 0.0, {"error": "parse error: no <answer>...</answer> block after </think>"}
        if len(answer) > MAX_ANSWER_CHARS:
            return 0.0, {"error": f"parse error: answer longer than {MAX_ANSWER_CHARS} characters"}
        try:
            return self.score(puzzle, answer)
        except ParseError as exc:
            return 0.0, {"error": f"parse error: {exc}"}

    def check_difficulty(self, difficulty: int) -> None:
        if difficulty not in self.levels:
            raise ValueError(
                f"{self.name}: difficulty {difficulty} out of range {min(self.levels)}..{max(self.levels)}"
            )


def exact_result(got: object, want: object) -> tuple[float, dict[str, Any]]:
    """The scoring record of a task with one right value: reward 1 on it, else what was expected and given."""
    if got == want:
        return 1.0, {"correct": True}
    return 0.0, {"correct": False, "expected": want, "got": got}


def flip_one_part(answer: str, seed: int, flip: Callable[[str], str]) -> str:
    """``answer``'s ", "-separated parts with one of them, drawn from ``seed``, passed through ``flip``: the
    near miss that `LogicTask.corrupt` returns for answers that list one value per name."""
    parts = answer.split(", ")
    k = random.Random(seed).randrange(len(parts))
    parts[k] = flip(parts[k])
    return ", ".join(parts)
