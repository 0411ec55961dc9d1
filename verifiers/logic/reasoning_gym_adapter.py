"""reasoning-gym's procedural datasets as extra logic tasks (``rg_<dataset>``), when the package is
installed (``pip install 'm1-pipeline[logic]'``).

Difficulty maps onto reasoning-gym's own curricula: level d sets every curriculum attribute to level d-1
(capped at that attribute's highest level). An instance is one entry of a one-item dataset built from the
curriculum's configuration with the instance seed, so the stored puzzle only needs (dataset, level,
seed): the verifier rebuilds the entry and scores with the dataset's own `score_answer`.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError

LEVELS = 5


def available() -> list[str]:
    """reasoning-gym datasets that have a curriculum (and so a difficulty scale); [] when not installed."""
    try:
        from reasoning_gym.factory import CURRICULA, DATASETS
    except ImportError:
        return []
    return sorted(name for name in DATASETS if name in CURRICULA)


class ReasoningGymTask(LogicTask):
    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.name = f"rg_{dataset}"
        self.description = f"reasoning-gym dataset {dataset!r}, difficulty from its curriculum"
        self.levels = {
            d: f"reasoning-gym curriculum level {d - 1} for every attribute" for d in range(1, LEVELS + 1)
        }

    def _entry(self, difficulty: int, seed: int) -> tuple[Any, dict[str, Any]]:
        import reasoning_gym
        from reasoning_gym.factory import create_curriculum

        curriculum = create_curriculum(self.dataset)
        curriculum.set_global_level(difficulty - 1)
        config = curriculum.generate_configuration({"seed": seed, "size": 1})
        fields = dataclasses.asdict(config) | {"seed": seed, "size": 1}
        dataset = reasoning_gym.create_dataset(self.dataset, **fields)
        return dataset, dataset[0]

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        self.check_difficulty(difficulty)
        _, entry = self._entry(difficulty, seed)
        prompt = f"{entry['question']}\n\n{ANSWER_FORMAT}"
        puzzle = {"dataset": self.dataset, "difficulty": difficulty, "seed": seed}
        return LogicInstance(self.name, difficulty, seed, prompt, str(entry["answer"]), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        if not answer.strip():
            raise ParseError("empty answer")
        dataset, entry = self._entry(puzzle["difficulty"], puzzle["seed"])
        try:
            reward = float(dataset.score_answer(answer, entry))
        except Exception as exc:  # noqa: BLE001 - some datasets' scorers raise on junk (int('zz9')): reward 0
            raise ParseError(
                f"reasoning-gym's {self.dataset} scorer refused the answer: {exc!r:.100}"
            ) from exc
        return max(0.0, min(1.0, reward)), {"correct": reward >= 1.0, "reasoning_gym": self.dataset}

    def measure(self, puzzle: dict[str, Any]) -> float:
        """reasoning-gym exposes difficulty only through its curriculum, so the level is the measure."""
        return float(puzzle["difficulty"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        digits = list(re.finditer(r"\d", instance.answer))
        if digits:
            i = digits[seed % len(digits)].start()
            return instance.answer[:i] + str((int(instance.answer[i]) + 1) % 10) + instance.answer[i + 1 :]
        return instance.answer + "x"


@cache
def reasoning_gym_task(dataset: str) -> ReasoningGymTask:
    names = available()
    if not names:
        raise KeyError("reasoning-gym is not installed (pip install 'm1-pipeline[logic]')")
    if dataset not in names:
        raise KeyError(f"unknown reasoning-gym dataset {dataset!r} (with a curriculum: {', '.join(names)})")
    return ReasoningGymTask(dataset)
