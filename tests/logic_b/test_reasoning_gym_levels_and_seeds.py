"""reasoning-gym tasks: level 1 is the curriculum's easiest level, and instances keep their seed
(skipped when reasoning-gym is absent)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("reasoning_gym")

from verifiers.logic import get_task  # noqa: E402


def test_level_one_is_the_curriculum_level_zero_two_one_digit_terms():
    task = get_task("rg_basic_arithmetic")
    for seed in range(12):
        question = task.generate(1, seed).prompt.split("\n")[0]
        numbers = re.findall(r"\d+", question)
        assert len(numbers) == 2 and all(len(n) == 1 for n in numbers), question


def test_an_instance_keeps_its_seed_in_the_item():
    task = get_task("rg_basic_arithmetic")
    inst = task.generate(2, 7)
    assert inst.seed == 7 and inst.difficulty == 2
    assert inst.puzzle == {"dataset": "basic_arithmetic", "difficulty": 2, "seed": 7, "answer": inst.answer}
