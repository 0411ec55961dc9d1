"""The SAT modelling helper against brute force, and the lenient answer parsers."""

from __future__ import annotations

import itertools
import random

import pytest

from verifiers.logic.base import ParseError, extract_answer
from verifiers.logic.grids import parse_binary_grid, parse_coords, parse_grid, parse_int_grid
from verifiers.logic.latin import all_vars, latin_model
from verifiers.logic.solvers import SatModel, reduce_clues


def test_counts_latin_squares_like_enumeration():
    for n, known in ((3, 12), (4, 576)):
        model, x = latin_model(n)
        with model.session() as s:
            assert s.count(all_vars(x), limit=known + 1) == known


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_cardinality_and_guards_match_brute_force(k):
    m = SatModel()
    lits = [m.var("b", i) for i in range(5)]
    guard = m.fresh()
    m.exactly(lits, k, guard=guard)
    m.at_most(lits[:3], 1)
    brute = sum(1 for bits in itertools.product((0, 1), repeat=5) if sum(bits) == k and sum(bits[:3]) <= 1)
    unguarded = sum(1 for bits in itertools.product((0, 1), repeat=5) if sum(bits[:3]) <= 1)
    with m.session() as s:
        assert s.count(lits, [guard], limit=64) == brute
        assert s.count(lits, [-guard], limit=64) == unguarded


def test_table_constraint_allows_exactly_its_rows():
    m = SatModel()
    cols = [m.one_hot(("c", i), range(3)) for i in range(2)]
    rows = [(0, 1), (2, 2), (1, 0)]
    m.table(cols, rows)
    with m.session() as s:
        found = s.solutions([lit for col in cols for lit in col.values()], limit=10)
    decoded = {tuple(next(v for v, lit in col.items() if lit in sol) for col in cols) for sol in found}
    assert decoded == set(rows)


def test_lazy_cuts_remove_models_the_check_rejects():
    m = SatModel()
    lits = [m.var("b", i) for i in range(3)]
    with m.session(lambda true: [[-lits[0], -lits[1]]] if {lits[0], lits[1]} <= true else []) as s:
        assert s.count(lits, limit=10) == 6  # 8 assignments minus the two with b0 and b1 both true


def test_reduced_clues_keep_the_solution_unique():
    rng = random.Random(3)
    model, x = latin_model(5)
    with model.session() as s:
        true = s.random_solution(all_vars(x), rng)
        clues = [[lit] for lit in sorted(true)]
        kept = reduce_clues(s, all_vars(x), clues, rng)
        assert s.count(all_vars(x), [clues[i][0] for i in kept]) == 1
        for drop in kept:  # minimal: removing any kept clue admits a second solution
            assert s.count(all_vars(x), [clues[i][0] for i in kept if i != drop]) == 2


@pytest.mark.parametrize(
    "text",
    ["1 2\n3 4", "1,2\n3,4", "[[1, 2], [3, 4]]", "12\n34", "| 1 | 2 |\n| 3 | 4 |", "row 1: 1 2\nrow 2: 3 4"],
)
def test_grid_layouts(text):
    if text.startswith("row"):
        with pytest.raises(ParseError):  # row labels are numbers too: ambiguous, so refused
            parse_int_grid(text, 2, 2)
    else:
        assert parse_int_grid(text, 2, 2) == [[1, 2], [3, 4]]


def test_grid_errors_and_symbols():
    with pytest.raises(ParseError, match="2x2"):
        parse_grid("1 2 3", 2, 2)
    assert parse_binary_grid("# .\n. #", 2, 2) == [[1, 0], [0, 1]]
    assert parse_coords("(1, 2), (3,4); 5 6") == [(1, 2), (3, 4), (5, 6)]
    with pytest.raises(ParseError):
        parse_coords("(1, 2), (3")
    with pytest.raises(ParseError):
        parse_coords("queens at a1")


def test_extract_answer_takes_the_last_block_after_thinking():
    assert extract_answer("<think><answer>1</answer></think>x<answer>2</answer><answer> 3 </answer>") == "3"
    assert extract_answer("<think><answer>1</answer></think> no block") is None
    assert extract_answer("<ANSWER>4</ANSWER>") == "4"
