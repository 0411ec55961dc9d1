"""Cipher tasks: known test vectors, round trips, and lenient judging of the letters."""

from __future__ import annotations

import pytest

from verifiers.logic.tasks.caesar_cipher import TASK as CAESAR
from verifiers.logic.tasks.rail_fence_cipher import TASK as RAIL
from verifiers.logic.tasks.substitution_cipher import TASK as SUBST
from verifiers.logic.tasks.vigenere_cipher import TASK as VIGENERE


def test_known_vectors():
    assert RAIL.encrypt("WEAREDISCOVERED", 3) == "WECRERDSOEEAIVD"
    assert VIGENERE.encrypt("ATTACK AT DAWN", "LEMON") == "LXFOPV EF RNHR"
    assert CAESAR.encrypt("HELLO WORLD", {"shift": 3, "given": True}) == "KHOOR ZRUOG"


@pytest.mark.parametrize("rails", range(2, 8))
def test_rail_fence_round_trip(rails):
    text = "THEQUICKBROWNFOXJUMPSOVERTHELAZYDOG"
    assert RAIL.decrypt(RAIL.encrypt(text, rails), rails) == text


def test_substitution_key_is_a_permutation():
    inst = SUBST.generate(3, 5)
    assert sorted(inst.puzzle["key"]) == [chr(c) for c in range(65, 91)]


@pytest.mark.parametrize("task", [CAESAR, VIGENERE, SUBST, RAIL])
def test_letters_are_judged_not_layout(task):
    inst = task.generate(2, 1)
    loose = '"' + inst.answer.lower().replace(" ", "  ") + '."'
    assert task.score(inst.puzzle, loose)[0] == 1.0
    assert task.score(inst.puzzle, inst.answer.replace(" ", ""))[0] == 1.0


def test_wrong_letter_is_located():
    inst = CAESAR.generate(1, 0)
    wrong = ("B" if inst.answer[2] != "B" else "C").join([inst.answer[:2], inst.answer[3:]])
    reward, details = CAESAR.score(inst.puzzle, wrong)
    assert reward == 0.0 and details["first_wrong_letter"] == 2


def test_hidden_shift_levels_only_ask_to_decrypt():
    for seed in range(5):
        inst = CAESAR.generate(6, seed)
        assert inst.puzzle["direction"] == "decrypt" and "unknown" in inst.prompt
        assert str(inst.puzzle["key"]["shift"]) not in inst.prompt.split("\n")[0]
