"""The contract every registered logic task must meet, checked at every difficulty level.

Parametrised over `verifiers.logic.TASKS`, so a new task module is covered as soon as it exists.
Instances are generated once per (task, level, seed) and shared by the tests below.
"""

from __future__ import annotations

import functools
import importlib
import json
from statistics import mean
from types import SimpleNamespace

import pytest

from verifiers import logic
from verifiers.logic import LOAD_ERRORS, TASKS, LogicInstance, get_task
from verifiers.logic.verifier import LogicVerifier

SEEDS = (0, 1)
MEASURE_SEEDS = SEEDS
CASES = [(name, d) for name, task in sorted(TASKS.items()) for d in task.difficulties]
IDS = [f"{name}-d{d}" for name, d in CASES]


@functools.cache
def instance(name: str, difficulty: int, seed: int) -> LogicInstance:
    return TASKS[name].generate(difficulty, seed)


def wrap(answer: str) -> str:
    return f"<answer>{answer}</answer>"


def test_every_task_module_imports():
    assert not LOAD_ERRORS


def test_registry_has_all_synlogic_scale_tasks():
    assert len(TASKS) >= 41, f"only {len(TASKS)} tasks: {sorted(TASKS)}"


@pytest.mark.parametrize("name", sorted(TASKS))
def test_task_declares_levels_and_description(name):
    task = TASKS[name]
    assert task.name == name
    assert task.description.strip()
    assert len(task.levels) >= 5 and all(text.strip() for text in task.levels.values())
    assert task.difficulties == sorted(task.levels)


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_gold_scores_one_and_near_miss_scores_zero(name, difficulty):
    task = TASKS[name]
    for seed in SEEDS:
        inst = instance(name, difficulty, seed)
        assert inst.task == name and inst.difficulty == difficulty and inst.seed == seed
        assert "<answer>" in inst.prompt, "the prompt must state the answer format"
        json.dumps(inst.puzzle)  # the puzzle travels in the item's metadata
        reward, details = task.verify(inst.puzzle, wrap(inst.answer))
        assert reward == 1.0, details
        bad = task.corrupt(inst, seed)
        assert bad != inst.answer
        reward, details = task.verify(inst.puzzle, wrap(bad))
        assert reward == 0.0, f"corrupted answer {bad!r} accepted: {details}"
        assert details


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_unparseable_answers_are_parse_errors(name, difficulty):
    task = TASKS[name]
    inst = instance(name, difficulty, SEEDS[0])
    for response in ("I have no idea.", "<answer>   </answer>", f"<think>{wrap(inst.answer)}</think> none"):
        reward, details = task.verify(inst.puzzle, response)
        assert reward == 0.0
        assert "parse error" in details.get("error", ""), (response, details)


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_answer_found_among_reasoning_text(name, difficulty):
    task = TASKS[name]
    inst = instance(name, difficulty, SEEDS[0])
    response = (
        "<think>Maybe <answer>not this one</answer>? Let me check again.</think>\n"
        "Working through the constraints step by step gives the following.\n"
        f"<answer>\n  {inst.answer}  \n</answer>\nI am confident in this answer."
    )
    reward, details = task.verify(inst.puzzle, response)
    assert reward == 1.0, details


@pytest.mark.parametrize("name", sorted(TASKS))
def test_generation_is_deterministic(name):
    """Regenerating gives the same instance (checked at both ends of the scale to keep the suite fast)."""
    task = TASKS[name]
    for difficulty in (task.difficulties[0], task.difficulties[-1]):
        assert task.generate(difficulty, SEEDS[0]) == instance(name, difficulty, SEEDS[0])


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_items_round_trip_through_the_logic_verifier(name, difficulty):
    inst = instance(name, difficulty, SEEDS[0])
    item = json.loads(json.dumps(inst.to_item(0))) | {"response": wrap(inst.answer)}
    (reward,) = LogicVerifier().verify([item])
    assert reward.reward == 1.0, reward.details


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_unique_puzzles_have_exactly_one_solution(name, difficulty):
    task = TASKS[name]
    for seed in SEEDS:
        count = task.count_solutions(instance(name, difficulty, seed).puzzle)
        assert count in (None, 1), f"{count} solutions"


@pytest.mark.parametrize("name", sorted(TASKS))
def test_different_seeds_give_different_instances(name):
    task = TASKS[name]
    top = task.difficulties[-1]
    prompts = {instance(name, top, seed).prompt for seed in MEASURE_SEEDS}
    assert len(prompts) > 1


@pytest.mark.parametrize("name", sorted(TASKS))
def test_measured_difficulty_grows_with_level(name):
    task = TASKS[name]
    means = [
        mean(task.measure(instance(name, d, s).puzzle) for s in MEASURE_SEEDS) for d in task.difficulties
    ]
    assert all(a <= b for a, b in zip(means, means[1:], strict=False)), means
    assert means[-1] > means[0], means


# -- discovery: `_discover` runs once at import; called again, a broken or clashing module is reported --


def test_every_task_module_is_found_once_under_its_name():
    found, errors = logic._discover()
    assert errors == {}
    assert list(found) == sorted(TASKS)  # modules in name order: the registry's order is stable
    assert all(found[name] is TASKS[name] for name in TASKS)


def fake_import(replace: dict):
    real = importlib.import_module

    def import_module(name: str, *args):
        short = name.rsplit(".", 1)[-1]
        if short in replace:
            value = replace[short]
            if isinstance(value, Exception):
                raise value
            return value
        return real(name, *args)

    return import_module


def test_a_module_that_fails_to_import_is_recorded_and_the_others_load(monkeypatch):
    monkeypatch.setattr(logic.importlib, "import_module", fake_import({"sudoku": ImportError("no solver")}))
    found, errors = logic._discover()
    assert errors == {"sudoku": "ImportError: no solver"}
    assert set(found) == set(TASKS) - {"sudoku"}


def test_a_module_without_a_task_is_skipped(monkeypatch):
    monkeypatch.setattr(logic.importlib, "import_module", fake_import({"sudoku": SimpleNamespace(TASK="x")}))
    found, errors = logic._discover()
    assert errors == {} and set(found) == set(TASKS) - {"sudoku"}


def test_two_modules_defining_one_task_name_are_refused(monkeypatch):
    clash = SimpleNamespace(TASK=TASKS["sudoku"])
    monkeypatch.setattr(logic.importlib, "import_module", fake_import({"zebra_puzzle": clash}))
    with pytest.raises(RuntimeError, match="two logic tasks named 'sudoku'"):
        logic._discover()


def test_unknown_task_names_list_the_known_ones():
    assert get_task("sudoku") is TASKS["sudoku"]
    with pytest.raises(KeyError, match="unknown logic task 'nope' .*sudoku.*rg_<name>"):
        get_task("nope")
