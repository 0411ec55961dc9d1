"""Final-answer extraction from long chains of thought, and the format check."""

from __future__ import annotations

import pytest

from verifiers.format import extract_answer, format_ok, last_boxed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so \boxed{5}", "5"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{\left\{1, \frac{2}{3}\right\}}", r"\left\{1, \frac{2}{3}\right\}"),
        (r"first \boxed{1} then \boxed{2}", "2"),
        (r"\boxed{\{1,2\}}", r"\{1,2\}"),  # escaped braces do not nest
        (r"\fbox{7}", "7"),
        (r"\boxed 42.", "42"),
        (r"ok \boxed{3} and a broken \boxed{4", "3"),  # unclosed last box: fall back to the earlier one
        (r"\boxed{}", None),
        ("no box", None),
    ],
)
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize(
    ("response", "answer", "method"),
    [
        # the think block's guesses are not the answer
        ("<think>maybe \\boxed{3}? Let me check...</think>The result is \\boxed{4}.", "4", "boxed"),
        ("<think>\\boxed{3}</think>So the answer is 12.", "12", "phrase"),
        ("Thus, the final answer is: $\\frac{3}{4}$.", "\\frac{3}{4}", "phrase"),
        ("The answer is 3.5 because of symmetry.", "3.5", "phrase"),
        ("Answer: **-7**", "-7", "phrase"),
        ("Long reasoning here over many lines.\nWe conclude.\n\n$x = 2$", "x = 2", "last_line"),
        ("Long reasoning here.\n\n17", "17", "last_line"),
        ("We keep going until the count reaches 15 objects in total", "15", "last_line"),
        ("the answer is $\\boxed{9}$", "9", "boxed"),
    ],
)
def test_extract_answer(response, answer, method):
    extraction = extract_answer(response)
    assert extraction is not None
    assert (extraction.text, extraction.method) == (answer, method)


@pytest.mark.parametrize("response", ["", "   ", "I could not solve this problem, sorry about that friend."])
def test_extract_answer_none(response):
    assert extract_answer(response) is None


def test_extract_ignores_boxes_inside_an_unclosed_think_only_when_closed():
    # with no </think>, everything is the answer section
    assert extract_answer("<think>I think \\boxed{5}").text == "5"


@pytest.mark.parametrize(
    ("response", "ok"),
    [
        ("<think>work</think> \\boxed{1}", True),
        ("work \\boxed{1}", True),
        ("<think>work \\boxed{1}", False),  # unclosed think
        ("<think>a</think><think>b</think>\\boxed{1}", False),
        ("</think>x<think>\\boxed{1}", False),
        ("<think>\\boxed{1}</think> so 1", False),  # box only inside the reasoning
        ("the answer is 1", False),
    ],
)
def test_format_ok(response, ok):
    assert format_ok(response)[0] is ok


def test_format_requires_think_when_asked():
    assert not format_ok("\\boxed{1}", require_think=True)[0]
    assert format_ok("<think>w</think>\\boxed{1}", require_think=True)[0]
