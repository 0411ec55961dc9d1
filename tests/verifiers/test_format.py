"""Final-answer extraction from long chains of thought, and the format check."""

from __future__ import annotations

import time

import pytest

from verifiers.format import extract_answer, format_ok, last_boxed, normalize_unicode


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
    extraction = extract_answer(response, last_line=True)
    assert extraction is not None
    assert (extraction.text, extraction.method) == (answer, method)


@pytest.mark.parametrize("response", ["", "   ", "I could not solve this problem, sorry about that friend."])
def test_extract_answer_none(response):
    assert extract_answer(response, last_line=True) is None


@pytest.mark.parametrize(
    "response", ["So she has 42 apples", "Long reasoning here.\n\n17", "<think>w</think>\n$x = 2$"]
)
def test_last_line_fallback_is_off_unless_asked(response):
    assert extract_answer(response) is None
    assert extract_answer(response, last_line=True).method == "last_line"


@pytest.mark.parametrize(
    ("response", "answers"),
    [
        (r"Maybe \boxed{41} or \boxed{42}", ("41", "42")),
        (r"<think>\boxed{1}</think> \boxed{2} so \boxed{2}", ("2", "2")),  # the reasoning's box is not read
        (r"\boxed{\boxed{5}} and \fbox{6}", ("5", "6")),  # a box around a box is one answer
        ("The answer is 41. No wait, the answer is 42.", ("41", "42")),  # two phrases on one line
        (r"the answer is 7, and \boxed{8}", ("8",)),  # boxes win over phrases
    ],
)
def test_extract_answer_returns_every_candidate(response, answers):
    extraction = extract_answer(response)
    assert extraction.answers == answers and extraction.text == answers[-1]


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("４２", "42"),  # full-width digits
        ("\u22123", "-3"),  # minus sign
        ("x²", "x^{2}"),  # not x2, which reads as 2x
        ("10⁻³", "10^{-3}"),
        ("a₁₂", "a_{12}"),
        ("½", "\\frac{1}{2}"),
        ("4\u200b2", "42"),  # zero-width space
        ("\\ｂｏｘｅｄ｛７｝", "\\boxed{7}"),
        ("plain ascii \\frac{1}{2}", "plain ascii \\frac{1}{2}"),
    ],
)
def test_normalize_unicode(text, normal):
    assert normalize_unicode(text) == normal


def test_extraction_is_linear_on_hostile_megabyte_responses():
    for hostile in ["\\boxed{" * 150_000, "the answer is \\(" * 70_000, "\\boxed{1}" * 100_000]:
        start = time.perf_counter()
        extract_answer(hostile, last_line=True)
        format_ok(hostile)
        assert time.perf_counter() - start < 5, hostile[:20]


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
