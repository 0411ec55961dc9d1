"""reasoning-gym's procedural datasets as extra logic tasks (``rg_<dataset>``), when the package is
installed (``pip install 'm1-pipeline[logic]'``).

Difficulty maps onto reasoning-gym's own curricula: level d sets every curriculum attribute to level d-1
(capped at that attribute's highest level), as `curriculum.set_global_level(d - 1)` does. An instance is
one entry of a one-item dataset built from that configuration with the instance seed, so the stored puzzle
holds (dataset, level, seed) and the entry's answer: the verifier rebuilds the entry and scores with the
dataset's own `score_answer`.

Two things a rebuilt entry may depend on, each of which made gold answers score 0 in another process.
Python's hash seed: polynomial_multiplication draws its terms from a set of sympy monomials, so the same
seed builds another polynomial in a process with another PYTHONHASHSEED; the puzzle keeps the entry's
own answer (``answer``), and scoring judges against it. The decimal context: decimal_arithmetic sets
the thread's decimal precision to its level's (6 at level 1) and leaves it there, and decimal_chain_sum
sums in whatever precision it finds, so its answers lost digits after a decimal_arithmetic item; every
entry is built, and scored, in a fresh default context (`_fresh_decimals`).

A task lists only the levels that work, each described by its settings. reasoning-gym 0.1.x ships
curricula that step outside what their own `validate()` accepts (`ACCEPTED` holds those fields to the
nearest accepted value, so each attribute still rises with the level) and a few levels that cannot be
used as they are (`UNLISTED`: measured, with the reason); a level whose settings `validate()` still
refuses is left out. Datasets with no reference answer (`NO_REFERENCE`) are not offered: no item of
theirs could pass the logic flow's gold check or serve the SFT warm start. Where several answers are
right, reasoning-gym keeps one in the entry's metadata (`METADATA_REFERENCE`), which is the gold answer.
tests/logic/test_reasoning_gym_levels.py generates every listed level of every task and scores its gold
in another process, with another hash seed and the tasks in the other order.
"""

from __future__ import annotations

import dataclasses
import decimal
import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache, lru_cache
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, MAX_ANSWER_CHARS, LogicInstance, LogicTask, ParseError

LEVELS = 5

Fields = dict[str, Any]

# Curricula values their dataset's validate() refuses, held to the nearest value it accepts.
ACCEPTED: dict[str, Callable[[Fields], Fields]] = {
    # rotation levels 5, 15, 25, 50 against validate's 1..25 (a shift of 50 is a shift of 24 anyway)
    "caesar_cipher": lambda f: {"max_rotation": min(f["max_rotation"], 25)},
    # node levels start at 4, but validate wants boards of 6 nodes or more
    "knight_swap": lambda f: {"min_nodes": max(f["min_nodes"], 6), "max_nodes": max(f["max_nodes"], 6)},
    # max_target levels 1, 0, 3, 7, 9, 21: the 0 fails validate's max_target > 0
    "modulo_grid": lambda f: {"max_target": max(f["max_target"], 1)},
    # empty-cell levels 4, 9, 16, 25; validate allows at most (min_board_size - 1) ** 2 of them
    "survo": lambda f: {"max_empty": min(f["max_empty"], (f["min_board_size"] - 1) ** 2)},
}

# Levels whose settings validate() accepts but that do not work, as measured (3 seeds per level).
UNLISTED: dict[str, tuple[frozenset[int], str]] = {
    "jugs": (
        frozenset({3, 4, 5}),
        "from 5 jugs up, the generator's breadth-first search over jug states runs for minutes per puzzle",
    ),
    "game_of_life": (
        frozenset({4, 5}),
        f"the reference grids are longer than the {MAX_ANSWER_CHARS} characters an answer may have",
    ),
    "rubiks_cube": (  # level 5 is a 7x7 cube, which validate() refuses
        frozenset({2, 3, 4}),
        "reasoning-gym's example answer, the reference, exists for the 3x3 cube only (these are 4x4 to 6x6)",
    ),
}

# Datasets whose entries carry no reference answer: their scorers judge a plan by simulating it.
NO_REFERENCE = {
    "boxnet": "no reference answer (the scorer simulates the box moves of a plan)",
    "rush_hour": "no reference answer (the scorer simulates the car moves of a plan)",
}

# Where several answers are right, the entry's `answer` is None and its metadata holds one that is.
METADATA_REFERENCE = {
    "graph_color": "possible_answer",
    "propositional_logic": "example_answer",
    "rubiks_cube": "example_correct_answer",
}


def _curricula() -> list[str]:
    try:
        from reasoning_gym.factory import CURRICULA, DATASETS
    except ImportError:
        return []
    return sorted(name for name in DATASETS if name in CURRICULA)


@cache
def settings(dataset: str, difficulty: int) -> Fields:
    """The dataset's config fields at a level (seed and size aside), `ACCEPTED` applied."""
    from reasoning_gym.factory import create_curriculum

    curriculum = create_curriculum(dataset)
    curriculum.set_global_level(difficulty - 1)
    config = curriculum.generate_configuration({"seed": 0, "size": 1})
    # Field by field, not dataclasses.asdict: that would turn nested option objects into dicts.
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
    for per_instance in ("seed", "size"):
        fields.pop(per_instance, None)
    if fix := ACCEPTED.get(dataset):
        fields |= fix(fields)
    return fields


def refusal(dataset: str, fields: Fields) -> str | None:
    """Why the dataset's own validate() refuses these settings, or None."""
    from reasoning_gym.factory import DATASETS

    try:
        config = DATASETS[dataset][1](**fields, seed=0, size=1)
        if hasattr(config, "validate"):
            config.validate()
    except (AssertionError, ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _describe(dataset: str, difficulty: int, fields: Fields) -> str:
    from reasoning_gym.coaching.attributes import RangeAttributeDefinition
    from reasoning_gym.factory import create_curriculum

    parts = []
    for attr in create_curriculum(dataset).attributes.values():
        if isinstance(attr, RangeAttributeDefinition):
            low, high = fields[attr.lower_field_name], fields[attr.upper_field_name]
            parts.append(f"{attr.name} {low}" if low == high else f"{attr.name} {low}..{high}")
        else:
            parts.append(f"{attr.name} {fields[attr.field_name]}")
    return f"reasoning-gym curriculum level {difficulty - 1}: {', '.join(parts)}"


@cache
def levels(dataset: str) -> dict[int, str]:
    """The levels of a dataset that work, each described by its settings."""
    unlisted = UNLISTED.get(dataset, (frozenset(), ""))[0]
    found = {}
    for d in range(1, LEVELS + 1):
        fields = settings(dataset, d)
        if d not in unlisted and refusal(dataset, fields) is None:
            found[d] = _describe(dataset, d, fields)
    return found


@cache
def not_offered() -> dict[str, str]:
    """reasoning-gym datasets with a curriculum that are not offered as tasks, with why."""
    out = {}
    for name in _curricula():
        if name in NO_REFERENCE:
            out[name] = NO_REFERENCE[name]
        elif not levels(name):
            out[name] = "its own validate() refuses the settings of every level"
    return out


def available() -> list[str]:
    """reasoning-gym datasets offered as tasks: those with a curriculum (and so a difficulty scale), a
    reference answer and at least one working level; [] when reasoning-gym is not installed."""
    return [name for name in _curricula() if name not in not_offered()]


def _fresh_decimals() -> AbstractContextManager[decimal.Context]:
    """Python's default decimal context for the block, whatever a dataset left in the thread's own."""
    return decimal.localcontext(decimal.Context())


@lru_cache(maxsize=64)  # generate then verify (the gold check) rebuilds the same entry: build it once
def _entry(dataset: str, difficulty: int, seed: int) -> tuple[Any, dict[str, Any]]:
    import reasoning_gym

    with _fresh_decimals():
        data = reasoning_gym.create_dataset(dataset, **settings(dataset, difficulty), seed=seed, size=1)
        return data, data[0]


def reference(dataset: str, entry: dict[str, Any]) -> str:
    """The entry's gold answer as text (one from its metadata, as JSON where it is a map or a list)."""
    if entry["answer"] is not None:
        return str(entry["answer"])
    kept = entry["metadata"].get(METADATA_REFERENCE.get(dataset, ""))
    if kept is None:
        raise ValueError(f"reasoning-gym's {dataset} entry has no reference answer")
    return kept if isinstance(kept, str) else json.dumps(kept)


class ReasoningGymTask(LogicTask):
    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.name = f"rg_{dataset}"
        self.description = f"reasoning-gym dataset {dataset!r}, difficulty from its curriculum"
        self.levels = levels(dataset)

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        self.check_difficulty(difficulty)
        _, entry = _entry(self.dataset, difficulty, seed)
        prompt = f"{entry['question']}\n\n{ANSWER_FORMAT}"
        puzzle = {"dataset": self.dataset, "difficulty": difficulty, "seed": seed}
        if isinstance(entry["answer"], str):  # the answer to this very question (see the module docstring)
            puzzle["answer"] = entry["answer"]
        return LogicInstance(self.name, difficulty, seed, prompt, reference(self.dataset, entry), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        if not answer.strip():
            raise ParseError("empty answer")
        dataset, entry = _entry(self.dataset, puzzle["difficulty"], puzzle["seed"])
        if "answer" in puzzle:  # as generated: a rebuilt entry may differ (see the module docstring)
            entry = {**entry, "answer": puzzle["answer"]}
        try:
            with _fresh_decimals():
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
    names = _curricula()
    if not names:
        raise KeyError("reasoning-gym is not installed (pip install 'm1-pipeline[logic]')")
    if dataset in not_offered():
        raise KeyError(f"reasoning-gym dataset {dataset!r} is not offered: {not_offered()[dataset]}")
    if dataset not in names:
        raise KeyError(
            f"unknown reasoning-gym dataset {dataset!r} (with a curriculum: {', '.join(available())})"
        )
    return ReasoningGymTask(dataset)
