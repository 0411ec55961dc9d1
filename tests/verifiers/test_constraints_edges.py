"""Instruction-following constraints, edge cases: the exact `why` of every verdict (details are what a
user reads to see why a response lost reward), one-sided bounds, spec errors word for word, the shape of
the reward details, and a language verdict that is the same on every run."""

from __future__ import annotations

import pytest

from verifiers.constraints import ConstraintVerifier

MARKDOWN_KINDS = "headings, bullets, numbered, bold, code_blocks, tables"


def score(response: str, *constraints: dict, mode: str = "fraction"):
    (reward,) = ConstraintVerifier(mode=mode).verify(
        [{"response": response, "constraints": list(constraints)}]
    )
    return reward


@pytest.mark.parametrize(
    ("response", "constraint", "ok", "why"),
    [
        # bounds: both, only a minimum, only a maximum
        (
            "one two three",
            {"type": "word_count", "min": 3, "max": 3},
            True,
            "3 words (required >= 3 and <= 3)",
        ),
        ("one", {"type": "word_count", "min": 2}, False, "1 words (required >= 2)"),
        ("a b c d", {"type": "word_count", "max": 3}, False, "4 words (required <= 3)"),
        # an unpunctuated last sentence counts once, on top of the ones that end in a mark
        (
            "One. Two",
            {"type": "sentence_count", "min": 2, "max": 2},
            True,
            "2 sentences (required >= 2 and <= 2)",
        ),
        ("Yes X", {"type": "sentence_count", "min": 1}, True, "1 sentences (required >= 1)"),
        ("A.\n\nB.", {"type": "paragraph_count", "min": 2}, True, "2 paragraphs (required >= 2)"),
        ("  abc  ", {"type": "char_count", "max": 2}, False, "3 characters (required <= 2)"),
        # a single keyword may be given as a plain string
        ("The cat sat.", {"type": "keywords", "words": "cat"}, True, "all present"),
        ("nothing here", {"type": "keywords", "words": ["cat", "mat"]}, False, "missing: cat, mat"),
        ("red red", {"type": "keywords", "words": ["red"], "min_count": 3}, False, "missing: red"),
        (
            "bad and awful",
            {"type": "forbidden_words", "words": ["bad", "awful", "ok"]},
            False,
            "used: bad, awful",
        ),
        ("all fine", {"type": "forbidden_words", "words": ["bad"]}, True, "none used"),
        (
            "go go go",
            {"type": "keyword_frequency", "word": "go", "min": 2, "max": 2},
            False,
            "3 x 'go' (required >= 2 and <= 2)",
        ),
        ('{"a": 1}', {"type": "json_format"}, True, "valid JSON"),
        (
            "{'a': 1}",
            {"type": "json_format"},
            False,
            "not valid JSON: Expecting property name enclosed in double quotes at line 1",
        ),
        ("[" * 100_000, {"type": "json_format"}, False, "not valid JSON: nested too deeply"),
        ("# T", {"type": "markdown", "headings": 2, "bullets": 1}, False, "headings 1 < 2; bullets 0 < 1"),
        ("- a\n- b", {"type": "markdown", "bullets": 2, "bold": 0}, True, "bullets 2, bold 0"),
        # a table may end the response; a line with a pipe is not a table without its rule
        ("| a | b |\n|---|---|", {"type": "markdown", "tables": 1}, True, "tables 1"),
        ("a | b\nplain text", {"type": "markdown", "tables": 1}, False, "tables 0 < 1"),
        ("12345 !!!", {"type": "language", "lang": "en"}, False, "no language detected (no letters?)"),
        # region subtags on either side compare by the language alone
        (
            "这是一个关于天气的中文句子，今天天气很好。",
            {"type": "language", "lang": "zh"},
            True,
            "detected zh-cn, required zh",
        ),
        (
            "The weather is lovely today and we are going for a long walk in the park.",
            {"type": "language", "lang": "EN-US"},
            True,
            "detected en, required en-us",
        ),
        ("mostly Lower", {"type": "case", "mode": "lower"}, False, "1 words not lower case (e.g. 'Lower')"),
        ("all lower", {"type": "case", "mode": "lower"}, True, "0 words not lower case"),
        ("a, b, c", {"type": "no_commas"}, False, "2 commas"),
        ("Hi [name]", {"type": "placeholders", "min": 2}, False, "1 placeholders (required >= 2)"),
    ],
)
def test_each_verdict_says_why(response, constraint, ok, why):
    reward = score(response, constraint)
    assert reward.details["constraints"] == [{"type": constraint["type"], "ok": ok, "why": why}]
    assert reward.reward == float(ok)


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        ({"type": "word_count"}, "constraint word_count: needs `min` and/or `max`"),
        ({"type": "keyword_frequency", "min": 1}, "constraint keyword_frequency: missing parameter `word`"),
        (
            {"type": "keywords", "words": [3]},
            "constraint keywords: `words` must be a list of non-empty strings",
        ),
        ({"type": "case", "mode": "sponge"}, "constraint case: case mode must be lower, upper or title"),
        # an unknown kind and an empty request are both refused, not scored as satisfied
        (
            {"type": "markdown", "italics": 1},
            f"constraint markdown: markdown takes minimum counts of {MARKDOWN_KINDS}",
        ),
        ({"type": "markdown"}, f"constraint markdown: markdown takes minimum counts of {MARKDOWN_KINDS}"),
    ],
)
def test_malformed_constraints_are_errors_that_name_the_constraint(constraint, message):
    reward = score("some text", constraint)
    assert (reward.reward, reward.details) == (0.0, {"error": message})


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"response": "x"}, "item has no `constraints` list"),
        ({"response": "x", "constraints": []}, "item has no `constraints` list"),
        ({"response": "x", "constraints": ["word_count"]}, "each constraint must be an object with a `type`"),
        (
            {"response": "x", "constraints": [{"type": "b"}, {"type": "a"}]},
            "unknown constraint type(s): a, b",
        ),
        ({"constraints": [{"type": "no_commas"}]}, "item has no text `response`"),
    ],
)
def test_malformed_items_get_exact_errors(item, message):
    (reward,) = ConstraintVerifier().verify([item])
    assert (reward.reward, reward.details) == (0.0, {"error": message})


def test_details_count_passed_and_total_and_keep_order():
    reward = score("a, b", {"type": "no_commas"}, {"type": "word_count", "max": 3})
    assert reward.reward == 0.5
    assert reward.details == {
        "passed": 1,
        "total": 2,
        "constraints": [
            {"type": "no_commas", "ok": False, "why": "1 commas"},
            {"type": "word_count", "ok": True, "why": "2 words (required <= 3)"},
        ],
    }


def test_bad_mode_message():
    with pytest.raises(ValueError) as raised:
        ConstraintVerifier(mode="some")
    assert str(raised.value) == "mode must be 'fraction' or 'all'"


def test_language_verdict_is_reproducible():
    # langdetect samples at random; "hello" is a coin flip between fi and nl unless the seed is fixed.
    # The seed (0) is part of the verifier's version: another seed gives "nl" here and changes rewards.
    verdicts = {
        score("hello", {"type": "language", "lang": "fi"}).details["constraints"][0]["why"] for _ in range(20)
    }
    assert verdicts == {"detected fi, required fi"}
