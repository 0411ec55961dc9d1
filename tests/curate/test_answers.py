"""Answer extraction (boxed, "the answer is", last expression) and the math-verify parse check."""

from __future__ import annotations

import polars as pl
import pytest

from flows.curate.answers import extract_answer, extract_answers


@pytest.mark.parametrize(
    "reference,answer,how",
    [
        ("so 3 + 4 = 7. \\boxed{7}", "7", "boxed"),
        ("first \\boxed{1} then \\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}", "boxed"),
        ("Thus the answer is 42.", "42", "answer-is"),
        ("Final answer: $\\frac{3}{4}$", "\\frac{3}{4}", "answer-is"),
        ("We get $x = 2$ and finally $x^2 = 4$", "x^2 = 4", "expression"),
        ("Add them: 12 apples plus 30 apples gives 42 apples", "42", "expression"),
        ("-17", "-17", "bare"),
        ("\\sqrt{2}", "\\sqrt{2}", "bare"),
        ("No idea, depends on the missing figure", None, "none"),
        ("\\boxed{\\frac{1}{2}", None, "unbalanced-boxed"),
        ("", None, "empty"),
    ],
)
def test_extract_answer(reference, answer, how):
    assert extract_answer(reference) == (answer, how)


def test_extract_answers_keeps_parseable_and_adds_column():
    df = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e", "f", "g"],
            "reference": [
                "The answer is \\boxed{\\frac{1}{2}}.",
                "depends on the figure",
                None,
                "\\boxed{\\frac{1}{2}",
                "so the answer is 12.",
                "The answer is blue.",
                "\\boxed{2\\sin x + 5\\text{ cm}}",
            ],
        }
    )
    res = extract_answers(df)
    assert res.kept["id"].to_list() == ["a", "e", "g"]
    assert res.kept["answer"].to_list() == ["\\frac{1}{2}", "12", "2\\sin x + 5\\text{ cm}"]
    reasons = dict(zip(res.removed["id"], res.removed["reason"], strict=True))
    assert reasons == {
        "b": "no answer found in the reference",
        "c": "no reference solution",
        "d": "unbalanced \\boxed{ in the reference",
        "f": "answer 'blue' (answer-is) is words ('blue'), not a rule-checkable expression",
    }
    assert res.count.rows_in == 7 and res.count.rows_out == 3
