"""reasoning-gym datasets through the LogicTask interface (skipped when reasoning-gym is absent)."""

from __future__ import annotations

from decimal import Decimal, getcontext, localcontext

import pytest

pytest.importorskip("reasoning_gym")

from verifiers.logic import LogicInstance, get_task  # noqa: E402
from verifiers.logic.reasoning_gym_adapter import available, settings  # noqa: E402
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


def test_the_answer_judged_is_the_one_generated_with_the_question():
    """A rebuilt entry can be another puzzle (polynomial_multiplication's terms come from a set, whose
    order follows the process's hash seed): the verifier judges against the answer the puzzle kept."""
    task = get_task("rg_polynomial_multiplication")
    first, second = task.generate(1, 0), task.generate(1, 1)
    assert first.puzzle["answer"] == first.answer and first.answer != second.answer
    as_elsewhere = first.puzzle | {"answer": second.answer}  # what another process generated for seed 0
    assert task.verify(as_elsewhere, f"</think>\n<answer>{second.answer}</answer>")[0] == 1.0
    assert task.verify(as_elsewhere, f"</think>\n<answer>{first.answer}</answer>")[0] == 0.0
    old = {k: v for k, v in first.puzzle.items() if k != "answer"}  # items generated before it was kept
    assert task.verify(old, f"<answer>{first.answer}</answer>")[0] == 1.0


def test_a_metadata_reference_is_not_kept_as_the_entrys_answer():
    inst = get_task("rg_graph_color").generate(1, 3)
    assert "answer" not in inst.puzzle and inst.answer  # the scorer checks the colouring against the graph
    assert get_task("rg_graph_color").verify(inst.puzzle, f"<answer>{inst.answer}</answer>")[0] == 1.0


def _exact_sum(expression: str) -> Decimal:
    terms = expression.split()
    with localcontext(prec=200):
        total = Decimal(terms[0])
        for op, term in zip(terms[1::2], terms[2::2], strict=True):
            total = total + Decimal(term) if op == "+" else total - Decimal(term)
        return total


@pytest.mark.parametrize("difficulty", [3, 4, 5])
def test_decimal_answers_do_not_depend_on_the_decimal_context_found(difficulty):
    """decimal_arithmetic sets the thread's precision to its level's (6 at level 1); decimal_chain_sum
    summed in whatever it found, so 3428284.30342 came out as 3.42823E+6 after it, in generation and
    again when the verifier rebuilt the entry."""
    before = getcontext().prec
    get_task("rg_decimal_arithmetic").generate(1, 123)
    assert getcontext().prec == before  # the precision it sets stays inside the adapter
    task = get_task("rg_decimal_chain_sum")
    with localcontext(prec=6):  # whatever else left a low precision in this thread
        inst = task.generate(difficulty, 1000 + difficulty)  # a seed no other test built (no cached entry)
        reward, _ = task.verify(inst.puzzle, f"</think>\n<answer>{inst.answer}</answer>")
    expression = inst.prompt.split(": ", 1)[1].split(" =")[0]
    assert Decimal(inst.answer) == _exact_sum(expression) and len(inst.answer) > 8, inst.answer
    assert reward == 1.0


def test_a_verdict_does_not_depend_on_the_decimal_context_found():
    """decimal_arithmetic accepts answers within 10**-places of its own; that difference, taken in a
    6-digit context, rounds a near miss onto the tolerance and accepts it."""
    task = get_task("rg_decimal_arithmetic")
    inst = task.generate(3, 5)
    places = settings("decimal_arithmetic", 3)["max_num_decimal_places"]
    with localcontext(prec=60):
        near = Decimal(inst.answer) + Decimal(10) ** -places * Decimal("1.0000001")  # just beyond it
    for prec in (6, 28):
        with localcontext(prec=prec):
            assert task.verify(inst.puzzle, f"<answer>{near}</answer>")[0] == 0.0, prec
            assert task.verify(inst.puzzle, f"<answer>{inst.answer}</answer>")[0] == 1.0, prec
