"""Instruction-following constraints: each rule check, reward modes, malformed constraint lists."""

from __future__ import annotations

import json

import pytest

from verifiers.constraints import CHECKS, ConstraintVerifier


def score(response: str, *constraints: dict, mode: str = "fraction"):
    (reward,) = ConstraintVerifier(mode=mode).verify(
        [{"response": response, "constraints": list(constraints)}]
    )
    return reward


@pytest.mark.parametrize(
    ("response", "constraint", "ok"),
    [
        ("one two three", {"type": "word_count", "min": 3, "max": 3}, True),
        ("one two three four", {"type": "word_count", "max": 3}, False),
        ("It's well-known.", {"type": "word_count", "max": 2}, True),  # contractions and hyphens are one word
        ("First one. Second one! Third?", {"type": "sentence_count", "min": 3, "max": 3}, True),
        (
            "Pi is 3.14 e.g. roughly. Yes",
            {"type": "sentence_count", "max": 2},
            True,
        ),  # decimals, abbreviations
        ("A.\n\nB.\n\n\nC.", {"type": "paragraph_count", "min": 3}, True),
        ("abc", {"type": "char_count", "max": 2}, False),
        ("The Cat sat on the mat.", {"type": "keywords", "words": ["cat", "mat"]}, True),
        ("The category is wide.", {"type": "keywords", "words": ["cat"]}, False),  # whole words only
        ("Red, red, red.", {"type": "keywords", "words": ["red"], "min_count": 3}, True),
        ("no bad words here", {"type": "forbidden_words", "words": ["terrible", "awful"]}, True),
        ("this is Awful", {"type": "forbidden_words", "words": ["awful"]}, False),
        ("go go go", {"type": "keyword_frequency", "word": "go", "min": 2, "max": 2}, False),
        ('{"a": [1, 2]}', {"type": "json_format"}, True),
        ('```json\n{"a": 1}\n```', {"type": "json_format"}, True),
        ("{'a': 1}", {"type": "json_format"}, False),
        (
            "# Title\n\n- a\n- b\n\n1. x\n\n**bold**",
            {"type": "markdown", "headings": 1, "bullets": 2, "numbered": 1, "bold": 1},
            True,
        ),
        ("| a | b |\n|---|:---:|\n| 1 | 2 |", {"type": "markdown", "tables": 1}, True),
        ("```py\nx = 1\n```", {"type": "markdown", "code_blocks": 1}, True),
        ("no markdown at all", {"type": "markdown", "bullets": 1}, False),
        (
            "The weather is lovely today and we are going for a long walk in the park.",
            {"type": "language", "lang": "en"},
            True,
        ),
        (
            "Das Wetter ist heute schön und wir gehen lange im Park spazieren.",
            {"type": "language", "lang": "en"},
            False,
        ),
        (
            "Das Wetter ist heute schön und wir gehen lange im Park spazieren.",
            {"type": "language", "lang": "de"},
            True,
        ),
        ("all lower case, 42 times", {"type": "case", "mode": "lower"}, True),
        ("ALL UPPER, OK", {"type": "case", "mode": "upper"}, True),
        ("Not All Title", {"type": "case", "mode": "title"}, True),
        ("mostly Lower", {"type": "case", "mode": "lower"}, False),
        ("Dear Sir, ...", {"type": "starts_with", "text": "Dear"}, True),
        ("... Any other questions?", {"type": "ends_with", "text": "Any other questions?"}, True),
        ("a, b", {"type": "no_commas"}, False),
        ("Hi [name], at [address]", {"type": "placeholders", "min": 2}, True),
    ],
)
def test_checks(response, constraint, ok):
    reward = score(response, constraint)
    assert "error" not in reward.details, reward.details
    assert reward.details["constraints"][0]["ok"] is ok, reward.details


def test_every_check_is_exercised():
    assert set(CHECKS) == {
        "word_count",
        "sentence_count",
        "paragraph_count",
        "char_count",
        "keywords",
        "forbidden_words",
        "keyword_frequency",
        "json_format",
        "markdown",
        "language",
        "case",
        "starts_with",
        "ends_with",
        "no_commas",
        "placeholders",
    }


def test_fraction_and_all_modes():
    constraints = [
        {"type": "word_count", "max": 3},
        {"type": "no_commas"},
        {"type": "keywords", "words": ["x"]},
    ]
    assert score("a, b", *constraints).reward == pytest.approx(1 / 3)
    assert score("a, b", *constraints, mode="all").reward == 0.0
    assert score("a x", *constraints, mode="all").reward == 1.0


def test_only_the_answer_after_thinking_is_checked():
    assert score("<think>Lots, of, commas</think>clean answer", {"type": "no_commas"}).reward == 1.0


def test_constraints_from_metadata_json():
    meta = json.dumps({"constraints": [{"type": "case", "mode": "upper"}]})
    (reward,) = ConstraintVerifier().verify([{"response": "YES", "metadata": meta}])
    assert reward.reward == 1.0


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"response": "x"}, "no `constraints`"),
        ({"response": "x", "constraints": [{"type": "telepathy"}]}, "unknown constraint type(s): telepathy"),
        ({"response": "x", "constraints": [{"type": "word_count"}]}, "needs `min` and/or `max`"),
        ({"response": "x", "constraints": [{"type": "keywords", "words": [3]}]}, "list of non-empty strings"),
        ({"response": "x", "constraints": [{"type": "case", "mode": "sponge"}]}, "lower, upper or title"),
        ({"response": "x", "constraints": ["word_count"]}, "object with a `type`"),
        ({"response": "x", "constraints": "[not json"}, "not valid JSON"),
        ({"response": None, "constraints": [{"type": "no_commas"}]}, "no text `response`"),
    ],
)
def test_malformed_items_get_errors(item, message):
    (reward,) = ConstraintVerifier().verify([item])
    assert reward.reward == 0 and message in reward.details["error"]


def test_bad_mode_is_rejected():
    with pytest.raises(ValueError, match="fraction"):
        ConstraintVerifier(mode="some")


@pytest.mark.timeout(30)
def test_hostile_markdown_is_linear():
    """A line full of pipes made the old table regex backtrack quadratically (minutes at this size)."""
    hostile = "|" * 200_000 + "\n" + "x|" * 100_000
    reward = score(hostile, {"type": "markdown", "tables": 1, "bold": 1, "code_blocks": 1})
    assert reward.reward == 0.0
