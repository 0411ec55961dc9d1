"""Cipher tasks: the verdict for a truncated answer, the effort measure of a given vs. hidden Caesar
shift, and near misses from corrupt() that are always wrong answers."""

from __future__ import annotations

from verifiers.logic.tasks.caesar_cipher import TASK as CAESAR


def test_truncated_answer_reports_end_of_text():
    puzzle = {"direction": "decrypt", "given": "KHOOR", "key": {"shift": 3, "given": True}}
    puzzle |= {"n_words": 1, "answer": "HELLO"}
    assert CAESAR.score(puzzle, "HEL") == (
        0.0,
        {
            "correct": False,
            "first_wrong_letter": 3,
            "expected": "L",
            "got": "<end>",
            "length": {"expected": 5, "got": 3},
        },
    )


def test_caesar_measure_is_words_times_candidate_shifts():
    for difficulty in CAESAR.difficulties:
        puzzle = CAESAR.generate(difficulty, 0).puzzle
        shifts = 1 if puzzle["key"]["given"] else 25
        assert CAESAR.measure(puzzle) == puzzle["n_words"] * shifts


def test_corrupt_always_changes_a_letter():
    inst = CAESAR.generate(1, 0)
    for seed in range(100):
        near = CAESAR.corrupt(inst, seed)
        assert near != inst.answer, seed
        assert CAESAR.score(inst.puzzle, near)[0] == 0.0


def test_caesar_shift_is_never_the_identity():
    for seed in range(200):
        inst = CAESAR.generate(1, seed)
        assert 1 <= inst.puzzle["key"]["shift"] <= 25, seed
        assert inst.puzzle["given"] != inst.answer, seed
