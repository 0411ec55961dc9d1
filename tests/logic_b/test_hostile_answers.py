"""Hostile or absurd answers get reward 0 with details, and random text never makes scoring raise
(set B tasks)."""

from __future__ import annotations

import random
import string

import pytest

from verifiers.logic import TASKS

SET_B = (
    "caesar_cipher vigenere_cipher substitution_cipher rail_fence_cipher game_of_24 cryptarithm number_wall "
    "mathador math_path knights_knaves web_of_lies zebra_puzzle boolean_sat boolean_expressions dyck_language "
    "dyck_language_errors word_sorting word_sorting_mistake bit_manipulation graph_coloring shortest_path "
    "hamiltonian_path object_counting time_sequence"
).split()
HOSTILE = [
    "1+" * 20000 + "1",  # parser recursion
    "(" * 300 + "1" + ")" * 300,
    "9" * 5000,  # int() digit limit
    "x" + "9" * 40 + "=True",
    "__import__('os').system('echo pwned')",
    "x" * 100_000,
]


@pytest.mark.parametrize("name", SET_B)
def test_hostile_answers_score_zero(name):
    task = TASKS[name]
    inst = task.generate(task.difficulties[1], 0)
    rng = random.Random(name)
    noise = [
        "".join(rng.choice(string.printable + "×÷→") for _ in range(rng.randint(1, 40))) for _ in range(40)
    ]
    for text in HOSTILE:
        reward, details = task.verify(inst.puzzle, f"<answer>{text}</answer>")
        assert reward == 0.0 and details, (text[:40], details)
    for text in noise:  # noise may contain a lone right number ("k4]" for step 4): it must just not crash
        reward, details = task.verify(inst.puzzle, f"<answer>{text}</answer>")
        assert reward in (0.0, 1.0) and details
