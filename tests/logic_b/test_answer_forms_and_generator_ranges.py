"""Answer forms users rely on (true/false, "none", whole walls, 12-hour times), the messages and details
they get back, and generator ranges the levels promise."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import verifiers.logic as logic
from verifiers.logic import TASKS
from verifiers.logic.base import ParseError
from verifiers.logic.graphs import vertex_map
from verifiers.logic.tasks.mathador import TASK as MATHADOR
from verifiers.logic.tasks.nonogram import TASK as NONOGRAM
from verifiers.logic.tasks.number_wall import TASK as WALL
from verifiers.logic.tasks.number_wall import build_wall
from verifiers.logic.tasks.rail_fence_cipher import TASK as RAIL
from verifiers.logic.tasks.sudoku import TASK as SUDOKU
from verifiers.logic.tasks.survo import TASK as SURVO
from verifiers.logic.tasks.time_sequence import parse_time
from verifiers.logic.tasks.web_of_lies import TASK as LIES
from verifiers.logic.tasks.word_sorting_mistake import TASK as MISTAKE
from verifiers.logic.textutil import one_integer
from verifiers.logic.verifier import LogicVerifier


def test_a_bare_number_answer_that_is_not_a_number_names_what_was_expected():
    with pytest.raises(ParseError, match=r"^expected one number, got 'seven'$"):
        one_integer("seven")


def test_a_module_with_no_task_attribute_at_all_is_skipped(monkeypatch):
    """Helper modules in tasks/ define no TASK; discovery passes over them instead of failing."""
    real = logic.importlib.import_module

    def import_module(name: str, *args):
        return SimpleNamespace() if name.endswith(".sudoku") else real(name, *args)

    monkeypatch.setattr(logic.importlib, "import_module", import_module)
    found, errors = logic._discover()
    assert errors == {}
    assert set(found) == set(TASKS) - {"sudoku"}


def test_the_logic_verifier_names_the_task_in_the_reward_details():
    inst = SUDOKU.generate(1, 0)
    item = inst.to_item(0) | {"response": f"<answer>{inst.answer}</answer>"}
    (reward,) = LogicVerifier().verify([item])
    assert reward.reward == 1.0
    assert reward.details == {"task": "sudoku", "correct": True}


def test_twelve_hour_times_stop_at_twelve():
    assert parse_time("12:30 pm") == 12 * 60 + 30
    assert parse_time("12:30 am") == 30
    for text in ("13:00 pm", "13:00 am", "0:30 pm"):
        with pytest.raises(ParseError, match="is not a time of day"):
            parse_time(text)


def test_a_whole_number_wall_that_breaks_the_sum_rule_is_wrong_even_with_the_right_base():
    inst = WALL.generate(1, 0)
    bottom = [int(v) for v in inst.answer.split()]
    wall = build_wall(bottom)  # wall[0] is the bottom row
    rows = [list(wall[r]) for r in reversed(range(len(wall)))]  # top row first
    whole = "\n".join(" ".join(map(str, row)) for row in rows)
    assert WALL.score(inst.puzzle, whole) == (1.0, {"correct": True})
    rows[0][0] += 1  # the top brick no longer is the sum of the two below it
    broken = "\n".join(" ".join(map(str, row)) for row in rows)
    assert WALL.score(inst.puzzle, broken) == (
        0.0,
        {"correct": False, "reason": "the submitted wall breaks the sum rule"},
    )


@pytest.mark.parametrize("seed", range(3))
def test_web_of_lies_accepts_true_and_false_for_yes_and_no(seed):
    inst = LIES.generate(2, seed)
    as_bools = inst.answer.replace("yes", "True").replace("no", "false")
    assert LIES.verify(inst.puzzle, f"<answer>{as_bools}</answer>") == (1.0, {"correct": True})
    flipped = as_bools.replace("True", "x").replace("false", "True").replace("x", "false")
    reward, details = LIES.verify(inst.puzzle, f"<answer>{flipped}</answer>")
    assert reward == 0.0 and details["wrong_question"] == 1


@pytest.mark.parametrize("phrase", ["0", "none", "None.", "no mistake", "no error", "correct"])
def test_no_mistake_can_be_answered_in_words(phrase):
    puzzle = {"words": ["ant", "bee", "cat"], "first_mistake": 0}
    assert MISTAKE.verify(puzzle, f"<answer>{phrase}</answer>") == (1.0, {"correct": True})
    assert MISTAKE.verify({**puzzle, "first_mistake": 2}, f"<answer>{phrase}</answer>") == (
        0.0,
        {"correct": False, "expected": 2, "got": 0},
    )


def test_mathador_level_one_targets_cover_the_promised_range_ends_included():
    low, high = 10, MATHADOR.sizes[1][2]
    assert MATHADOR.levels[1].endswith(f"target up to {high}")
    targets = {MATHADOR.generate(1, seed).puzzle["target"] for seed in range(300)}
    assert min(targets) == low and max(targets) == high


def test_survo_solution_count_stops_at_two_by_default():
    """The default question is 'unique or not': an empty grid has many fillings, counted as 2."""
    puzzle = dict(SURVO.generate(1, 0).puzzle)
    puzzle["givens"] = [[0] * len(row) for row in puzzle["givens"]]
    assert SURVO.count_solutions(puzzle) == 2
    assert SURVO.count_solutions(puzzle, limit=5) == 5


def test_a_number_wall_is_built_from_the_bottom_row_up_to_the_single_top_brick():
    assert build_wall([1, 2, 3]) == [[1, 2, 3], [3, 5], [8]]
    assert build_wall([4]) == [[4]]


def test_a_rail_fence_with_one_rail_leaves_the_text_as_it_is():
    assert RAIL.encrypt("WEAREDISCOVERED", 1) == "WEAREDISCOVERED"
    assert RAIL.decrypt("WEAREDISCOVERED", 1) == "WEAREDISCOVERED"
    assert RAIL.encrypt("WEAREDISCOVERED", 3) == "WECRERDSOEEAIVD"  # the example the prompt gives


def test_a_vertex_map_can_be_the_bare_values_in_vertex_order():
    assert vertex_map("2, 1, 3", 3) == {1: 2, 2: 1, 3: 3}
    assert vertex_map("2; 1 3", 3) == {1: 2, 2: 1, 3: 3}
    with pytest.raises(ParseError, match=r"unexpected 'x' in a list of values"):
        vertex_map("2 1 x", 3)
    with pytest.raises(ParseError, match="expected vertex:value pairs or 3 values, found 2 numbers"):
        vertex_map("2, 1", 3)


def test_nonogram_difficulty_counts_only_the_cells_left_to_decide():
    puzzle = dict(NONOGRAM.generate(1, 0).puzzle)
    cells = puzzle["rows"] * puzzle["cols"]
    assert NONOGRAM.measure({**puzzle, "given": []}) == cells
    revealed = [[0, 0, puzzle["solution"][0][0]], [1, 1, puzzle["solution"][1][1]]]
    assert NONOGRAM.measure({**puzzle, "given": revealed}) == cells - 2


def test_an_unknown_task_with_no_tasks_loaded_says_none_are_known(monkeypatch):
    monkeypatch.setattr(logic, "TASKS", {})
    with pytest.raises(KeyError, match=r"unknown logic task 'sudoku' \(known: none; "):
        logic.get_task("sudoku")
