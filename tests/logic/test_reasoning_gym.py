"""reasoning-gym datasets through the LogicTask interface (skipped when reasoning-gym is absent)."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

from verifiers.logic import get_task  # noqa: E402
from verifiers.logic.reasoning_gym_adapter import available  # noqa: E402
from verifiers.logic.verifier import LogicVerifier  # noqa: E402

DATASETS = ["basic_arithmetic", "word_sorting", "binary_alternation"]


def test_datasets_with_curricula_are_listed():
    assert set(DATASETS) <= set(available())


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("difficulty", [1, 5])
def test_reasoning_gym_task_round_trip(dataset, difficulty):
    task = get_task(f"rg_{dataset}")
    inst = task.generate(difficulty, 7)
    assert task.generate(difficulty, 7) == inst
    assert "<answer>" in inst.prompt
    item = inst.to_item() | {"response": f"<think>hmm</think> so <answer>{inst.answer}</answer>"}
    (reward,) = LogicVerifier().verify([item])
    assert reward.reward == 1.0, reward.details
    reward, details = task.verify(inst.puzzle, "no tags here")
    assert reward == 0.0 and "parse error" in details["error"]


def test_near_miss_is_not_full_credit():
    task = get_task("rg_basic_arithmetic")
    inst = task.generate(3, 1)
    reward, _ = task.verify(inst.puzzle, f"<answer>{task.corrupt(inst, 0)}</answer>")
    assert reward < 1.0


def test_unknown_dataset_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown reasoning-gym dataset"):
        get_task("rg_no_such_dataset")
