"""Answer extraction and the format check, edge cases: boxes at the end of a text or glued to a word,
the brace-less box inside math delimiters, phrase answers cut at prose, many phrases, the last-line
fallback's prose test, several `</think>`, and the exact reasons of `think_ok` / `format_ok`."""

from __future__ import annotations

import pytest

from verifiers.format import boxed_answers, extract_answer, format_ok, think_ok
from verifiers.math import MathVerifier


@pytest.mark.parametrize(
    ("text", "answers"),
    [
        (r"so \boxed", []),  # a box command with nothing after it
        ("so \\boxed   ", []),
        (r"\boxeds are drawn around answers", []),  # a word that starts with the command is not a box
        (r"\boxed5", []),
        (r"\boxed \pi", [r"\pi"]),
        (r"\boxed{1}\fbox{2}", ["1", "2"]),
    ],
)
def test_boxed_answers_edges(text, answers):
    assert boxed_answers(text) == answers


@pytest.mark.parametrize(
    ("text", "answers"),
    [
        (r"so \(\boxed 5\)", ["5"]),
        (r"so \[\boxed 5\]", ["5"]),
        (r"\boxed{\boxed 5}", ["5"]),
        (r"\boxed 41\boxed 42", ["41", "42"]),
        (r"\boxed -3\fbox{4}", ["-3", "4"]),
    ],
)
def test_a_brace_less_box_stops_at_closing_delimiters_and_at_the_next_box(text, answers):
    assert boxed_answers(text) == answers


def test_brace_less_boxes_in_math_score_and_hedge_like_braced_ones():
    # "\(\boxed 5\)" once read "5\)" and scored 0; "\boxed 4\boxed 5" once read only 5: a hedge that scored 1
    items = [{"reference": "5", "response": r} for r in (r"so \(\boxed 5\)", r"\boxed 4\boxed 5")]
    right, hedged = MathVerifier().verify(items)
    assert (right.reward, right.details["answer"]) == (1.0, "5")
    assert hedged.reward == 0 and hedged.details["answers"] == ["4", "5"]


def test_only_the_text_after_the_last_think_close_is_read():
    extraction = extract_answer("a</think>\\boxed{1}</think>\\boxed{2}")
    assert extraction.answers == ("2",)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("The answer is about $5$.", "5"),  # math anywhere in the phrase wins over the words around it
        ("The answer is 3 + 4", "3 + 4"),
        ("The answer is 3 + 4 apples", "3 + 4"),  # cut at the first prose word after the answer
        ("The answer is 12 Apples", "12"),
        ("The answer is yes.", "yes"),  # a word as the answer itself is kept
        ("The answer is X", "X"),
        ("The answer is **X**.", "X"),
        # a tab keeps the scanner from seeing the box in the text; the phrase's answer is still unboxed
        ("The answer is \\boxed\t{5} apples", "5"),
    ],
)
def test_phrase_answers(response, answer):
    extraction = extract_answer(response)
    assert (extraction.method, extraction.text) == ("phrase", answer)


def test_many_phrases_keep_the_first_fifteen_and_the_last():
    response = "".join(f"The answer is {i}.\n" for i in range(1, 21))
    assert extract_answer(response).answers == (*(str(i) for i in range(1, 16)), "20")


@pytest.mark.parametrize("response", [None, 42, b"\\boxed{1}"])
def test_a_response_that_is_not_text_has_no_answer(response):
    assert extract_answer(response, last_line=True) is None


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("so $x = 2$", "x = 2"),  # math in the line is the answer, not the words around it
        ("x = 2", "x = 2"),  # short and not prose: the whole line
        ("y = " + "1" * 34 + " z", "y = " + "1" * 34 + " z"),  # 40 characters is still short
        ("keep going 15", "15"),  # prose: its last number
        ("KEEP GOING 15", "15"),
        ("We counted them all and the total came to 1,234,", "1,234"),
    ],
)
def test_last_line_fallback(line, answer):
    extraction = extract_answer(f"Work.\n\n{line}", last_line=True)
    assert (extraction.method, extraction.text) == ("last_line", answer)


@pytest.mark.parametrize(
    ("response", "options", "verdict"),
    [
        ("plain answer", {}, (True, "ok")),  # tags are optional unless required
        ("plain answer", {"require_think": True}, (False, "missing </think>")),
        ("<think>a</think>b", {"require_think": True}, (True, "ok")),
        ("<think><think>a</think>b", {}, (False, "unbalanced <think> tags")),
        ("a</think>b</think>c", {}, (False, "unbalanced <think> tags")),
        ("<think>a", {}, (False, "unbalanced <think> tags")),
        ("</think>a<think>b", {}, (False, "</think> before <think>")),
    ],
)
def test_think_ok_reasons(response, options, verdict):
    assert think_ok(response, **options) == verdict


@pytest.mark.parametrize(
    ("response", "verdict"),
    [
        (None, (False, "response is not text")),
        ("<think>a", (False, "unbalanced <think> tags")),
        ("<think>a</think> no box", (False, "no \\boxed{} answer after the reasoning")),
        ("<think>a</think> \\boxed{1}", (True, "ok")),
    ],
)
def test_format_ok_reasons(response, verdict):
    assert format_ok(response) == verdict
