"""Strings, sequences, counting and scheduling: checkers agree with independent reasoning."""

from __future__ import annotations

import pytest

from verifiers.logic.dyck import closing, first_error
from verifiers.logic.tasks.bit_manipulation import TASK as BITS
from verifiers.logic.tasks.bit_manipulation import apply
from verifiers.logic.tasks.dyck_language import TASK as DYCK
from verifiers.logic.tasks.dyck_language_errors import TASK as DYCK_ERR
from verifiers.logic.tasks.object_counting import TASK as COUNT
from verifiers.logic.tasks.time_sequence import TASK as TIME
from verifiers.logic.tasks.time_sequence import parse_time
from verifiers.logic.tasks.word_sorting import TASK as SORT
from verifiers.logic.tasks.word_sorting_mistake import TASK as MISTAKE


def test_dyck_helpers():
    assert closing("([{<>") == "}])"
    assert first_error("([)]") == 3
    assert first_error("())") == 3
    assert first_error("([]{})((") == 0


def test_dyck_completion_accepts_the_whole_sequence_too():
    inst = DYCK.generate(3, 2)
    prefix = inst.puzzle["prefix"]
    assert DYCK.score(inst.puzzle, prefix + inst.answer.replace(" ", ""))[0] == 1.0
    assert DYCK.score(inst.puzzle, inst.answer + " )")[0] == 0.0


def test_dyck_errors_answer_is_the_checkers_position():
    for seed in range(10):
        inst = DYCK_ERR.generate(4, seed)
        assert int(inst.answer) == first_error(inst.puzzle["sequence"])
    valid = {"sequence": "()", "first_error": 0, "length": 2}
    assert DYCK_ERR.score(valid, "no error")[0] == 1.0


def test_word_sorting_is_lenient_about_layout():
    inst = SORT.generate(4, 3)
    words = inst.answer.split()
    assert SORT.score(inst.puzzle, ", ".join(f"'{w.capitalize()}'" for w in words))[0] == 1.0
    reward, details = SORT.score(inst.puzzle, " ".join(words[:-1]))
    assert reward == 0.0 and details["missing"] == [words[-1]]


@pytest.mark.parametrize("seed", range(8))
def test_sorting_trace_is_wrong_exactly_from_the_named_step(seed):
    inst = MISTAKE.generate(3, seed)
    trace = [line.split("-> ")[1].split() for line in inst.prompt.splitlines() if line.startswith("Step ")]
    first_unsorted = next((k for k, lst in enumerate(trace, 1) if lst != sorted(lst)), 0)
    assert first_unsorted == int(inst.answer)


def test_bit_operations():
    assert apply(["ROL", 3], 0b10010001, 8) == 0b10001100
    assert apply(["ROR", 1], 0b0001, 4) == 0b1000
    assert apply(["SHL", 2], 0b1101, 4) == 0b0100
    assert apply(["NOT", 0], 0b1010, 4) == 0b0101
    inst = BITS.generate(3, 4)
    assert BITS.score(inst.puzzle, "0b" + inst.answer)[0] == 1.0
    assert BITS.score(inst.puzzle, inst.answer.lstrip("0") or "0")[0] == 1.0
    assert "parse error" in BITS.score(inst.puzzle, "2a")[1]["error"]


def test_object_counting_reads_number_words():
    inst = COUNT.generate(2, 1)
    words = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
    assert COUNT.score(inst.puzzle, f"I count {words[int(inst.answer)]} in total")[0] == 1.0


def test_time_formats_and_clash_detail():
    assert parse_time("1:30 pm") == 13 * 60 + 30
    assert parse_time("13h05") == 13 * 60 + 5
    assert parse_time("12:15 a.m.") == 15
    inst = TIME.generate(3, 2)
    start = inst.puzzle["start"]
    twelve_hour = f"{(start // 60 - 1) % 12 + 1}:{start % 60:02d} {'pm' if start >= 720 else 'am'}"
    assert TIME.score(inst.puzzle, twelve_hour)[0] == 1.0
    reward, details = TIME.score(inst.puzzle, "09:00")
    assert reward == 0.0 and details["reason"].startswith("clashes with")
