"""Contract checks for the logic tasks of this set (gold, near miss, unparseable, determinism, measure).

The generic suite in tests/logic/ covers every registered task; this file keeps the same contract close
to these modules while they change, at a few seeds per level."""

from __future__ import annotations

import importlib

import pytest

B_TASKS = [
    "caesar_cipher",
    "vigenere_cipher",
    "substitution_cipher",
    "rail_fence_cipher",
    "game_of_24",
    "cryptarithm",
    "number_wall",
    "mathador",
    "math_path",
    "knights_knaves",
    "web_of_lies",
    "zebra_puzzle",
    "boolean_sat",
    "boolean_expressions",
    "dyck_language",
    "dyck_language_errors",
    "word_sorting",
    "word_sorting_mistake",
    "bit_manipulation",
    "graph_coloring",
    "shortest_path",
    "hamiltonian_path",
    "object_counting",
    "time_sequence",
]
SEEDS = range(3)


def _task(name: str):
    try:
        return importlib.import_module(f"verifiers.logic.tasks.{name}").TASK
    except ModuleNotFoundError:
        pytest.skip(f"{name} not written yet")


@pytest.mark.parametrize("name", B_TASKS)
def test_gold_near_miss_and_garbage(name: str) -> None:
    task = _task(name)
    assert len(task.levels) >= 5
    for d in task.difficulties:
        for seed in SEEDS:
            inst = task.generate(d, seed)
            assert inst.answer and "<answer>" in inst.prompt
            wrapped = f"Let me think.</think>Some reasoning.\n<answer>{inst.answer}</answer>\nDone."
            assert task.verify(inst.puzzle, wrapped) == (1.0, task.verify(inst.puzzle, wrapped)[1])
            bad = task.corrupt(inst, seed)
            reward, details = task.score(inst.puzzle, bad)
            assert reward == 0.0, (d, seed, bad, details)
            reward, details = task.verify(inst.puzzle, "I give up <answer>???</answer>")
            assert reward == 0.0 and details["error"].startswith("parse error"), details


@pytest.mark.parametrize("name", B_TASKS)
def test_deterministic_and_measure_grows(name: str) -> None:
    task = _task(name)
    means = []
    for d in task.difficulties:
        a, b = task.generate(d, 7), task.generate(d, 7)
        assert a.as_dict() == b.as_dict()
        means.append(sum(task.measure(task.generate(d, s).puzzle) for s in SEEDS) / len(SEEDS))
    assert means == sorted(means) and means[0] < means[-1], means
