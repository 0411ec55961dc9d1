"""reasoning-gym datasets through the LogicTask interface (skipped when reasoning-gym is absent)."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

from verifiers.logic import LogicInstance, get_task  # noqa: E402
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


def test_levels_name_the_curriculum_level_each_maps_to_and_its_settings():
    task = get_task("rg_basic_arithmetic")
    assert task.levels == {
        1: "reasoning-gym curriculum level 0: num_terms 2, num_digits 1",
        2: "reasoning-gym curriculum level 1: num_terms 2..3, num_digits 1..2",
        3: "reasoning-gym curriculum level 2: num_terms 2..4, num_digits 1..3",
        4: "reasoning-gym curriculum level 3: num_terms 2..5, num_digits 1..4",
        5: "reasoning-gym curriculum level 4: num_terms 2..6, num_digits 1..4",
    }


def test_near_miss_bumps_one_digit_chosen_by_the_seed_or_appends_a_letter():
    task = get_task("rg_basic_arithmetic")

    def near(answer: str, seed: int) -> str:
        return task.corrupt(LogicInstance("rg_basic_arithmetic", 1, 0, "", answer), seed)

    assert [near("-19 and 4", seed) for seed in range(4)] == [
        "-29 and 4",
        "-10 and 4",
        "-19 and 5",
        "-29 and 4",
    ]
    assert near("no digits", 3) == "no digitsx"
