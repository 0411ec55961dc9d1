"""The answer-extraction and text-normalisation contracts the curation steps rely on.

Answers: which part of a reference solution becomes the answer (and the `how` label saying why), which
references are rejected and with what reason, and the parse check's fast path and cache.
Text: the exact-dedup key, word tokens with their offsets, n-gram shingles and the 64-bit n-gram hashes
that near-dedup and contamination compare.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from flows.curate import answers
from flows.curate.answers import extract_answer, extract_answers, parses, reference_box
from flows.curate.text import (
    GOLDEN64,
    fmix64,
    ngram_hashes,
    normalized,
    shingle_strings,
    token_hashes,
    word_lists,
    word_tokens,
)
from flows.errors import InputError
from tests.curate.helpers import removed_reasons

# --- reference_box ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,content",
    [
        ("\\boxed{5}", "5"),  # a box at the very start of the text
        ("\\fbox{5}", "5"),
        ("\\boxed{1} and later \\fbox{2}", "2"),  # the later of the two commands wins
        ("\\fbox{1} and later \\boxed{2}", "2"),
        ("\\fbox{1} and later \\fbox{2}", "2"),
        ("sets {a} and {b}, so \\boxed{b}", "b"),  # braces before the box are not its content
        ("\\boxed{a{b}c}", "a{b}c"),
        ("\\boxed{\\frac{\\sqrt{2}}{2}} done", "\\frac{\\sqrt{2}}{2}"),
        ("\\boxed{{x}}", "{x}"),
        ("\\boxed{  7  }", "7"),
        ("\\boxed{x} }", "x"),  # a stray closing brace after the box is not content
    ],
)
def test_reference_box_returns_the_balanced_content_of_the_last_box(text, content):
    assert reference_box(text) == content


@pytest.mark.parametrize(
    "text",
    [
        "no box here {1}",
        "\\boxed 5",  # the command without a brace
        "\\boxed{1} then \\boxed{2",  # the last box is unbalanced: no fallback to an earlier one
        "\\boxed{a{b}",
        "\\boxed{   }",  # an empty box is no answer
        "\\boxed{}",
    ],
)
def test_reference_box_is_none_without_a_complete_nonempty_last_box(text):
    assert reference_box(text) is None


# --- extract_answer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reference,expected",
    [
        # a box wins over everything else in the text
        ("The answer is 3, but actually \\boxed{4}", ("4", "boxed")),
        ("$x=1$ so \\fbox{-2}", ("-2", "boxed")),
        # a \boxed/\fbox command that yields nothing is not silently read some other way
        ("\\fbox{3", (None, "unbalanced-boxed")),
        ("The answer is 3 \\boxed 3", (None, "unbalanced-boxed")),
        # "the (final) answer is ..." forms: the last one, without $ and the closing period
        ("The answer is 4. Then the final answer is 5.", ("5", "answer-is")),
        ("Final answer: 12", ("12", "answer-is")),
        ("Answer = 12", ("12", "answer-is")),
        ("answer: 5\nmore text follows here", ("5", "answer-is")),
        ("So the answer is: $\\frac{7}{2}.$", ("\\frac{7}{2}", "answer-is")),
        ("The answer is $3X$.", ("3X", "answer-is")),
        ("The answer is 3..", ("3", "answer-is")),
        # a short reference with no prose word is its own answer
        ("  42\n", ("42", "bare")),
        ("$X + 1$", ("X + 1", "bare")),
        ("2x + y", ("2x + y", "bare")),
        ("1" * 38 + "+2", ("1" * 38 + "+2", "bare")),  # 40 characters: still bare
        ("1" * 39 + "+2", ("2", "expression")),  # 41: read as text, its last number
        ("1\n2", ("2", "expression")),  # several lines are a solution, not an answer
        ("ab", (None, "none")),  # a word is not a bare answer
        # otherwise the last math span, whichever delimiters it uses
        ("First $a$, then $$ b + 1 $$ in the end", ("b + 1", "expression")),
        ("First $a$, then $b^2$ in the end", ("b^2", "expression")),
        ("We compute \\( y = 3 \\) here", ("y = 3", "expression")),
        ("We compute $x$ and \\[ z = 4 \\] here", ("z = 4", "expression")),
        ("Only $7$ is found in this sentence", ("7", "expression")),
        # else the last number, thousands separators dropped
        ("The population grew to 1,234,567 people", ("1234567", "expression")),
        ("It costs 3 dollars or maybe -2.5 dollars", ("-2.5", "expression")),
        ("Half of the cake is 1/2 of it", ("1/2", "expression")),
        ("   \n ", (None, "empty")),
        (None, (None, "empty")),
    ],
)
def test_extract_answer_order_and_how(reference, expected):
    assert extract_answer(reference) == expected


# --- parses -----------------------------------------------------------------------------------------


def _count_parse_calls(monkeypatch, result):
    import math_verify

    calls: list[str] = []

    def fake_parse(text, **kwargs):
        calls.append(text)
        if isinstance(result, Exception):
            raise result
        return result

    monkeypatch.setattr(math_verify, "parse", fake_parse)
    return calls


@pytest.mark.parametrize("number", ["42", " -17 ", "3.25", "-7/8"])
def test_plain_numbers_parse_without_math_verify(monkeypatch, number):
    calls = _count_parse_calls(monkeypatch, RuntimeError("must not be called"))
    assert parses(number) is True
    assert calls == []


def test_parse_verdicts_are_cached_per_answer(monkeypatch):
    calls = _count_parse_calls(monkeypatch, ["parsed"])
    answer = "\\frac{cache}{test-1}"
    assert parses(answer) is True and parses(answer) is True
    assert calls == [f"${answer}$"]


def test_a_math_verify_crash_means_not_parseable(monkeypatch):
    _count_parse_calls(monkeypatch, RuntimeError("parser bug"))
    assert parses("\\frac{crash}{test-2}") is False


def test_an_empty_parse_means_not_parseable(monkeypatch):
    _count_parse_calls(monkeypatch, [])
    assert parses("\\frac{empty}{test-3}") is False


def test_real_math_verify_verdicts():
    assert parses("\\frac{1}{2}") is True
    assert parses("\\$") is False


# --- extract_answers --------------------------------------------------------------------------------


def test_extract_answers_reasons_word_for_word():
    long_prose = "the cat sat on the mat " * 5
    df = pl.DataFrame(
        {
            "id": ["ws", "fbox", "two", "long", "bad", "num"],
            "reference": [
                "  ",
                "\\fbox{3",
                "The answer is blue or green.",
                f"\\boxed{{{long_prose}}}",
                "\\boxed{\\$}",
                "Add them: 1,000 apples plus 234 apples gives 1,234 apples",
            ],
        }
    )
    res = extract_answers(df)
    assert removed_reasons(res) == {
        "ws": "no reference solution",
        "fbox": "unbalanced \\boxed{ in the reference",
        "two": "answer 'blue or green' (answer-is) is words ('blue'), not a rule-checkable expression",
        "long": "answer 'the cat sat on the mat the cat sat on the mat the cat sat on' (boxed) is "
        "words ('the'), not a rule-checkable expression",
        "bad": "answer '\\\\$' (boxed) not parseable by math-verify",
    }
    assert res.kept["id"].to_list() == ["num"]
    assert res.kept["answer"].to_list() == ["1234"]
    # the removed rows keep their extracted answer (None when nothing was found)
    assert res.removed["answer"].to_list() == [None, None, "blue or green", long_prose.strip(), "\\$"]


@pytest.mark.parametrize(
    "answer",
    ["2 sin x", "Min(2, 5)", "MAX(2, 5)", "log(100)", "gcd(4, 6)", "3 and 4", "5\\text{ apples}"],
)
def test_function_names_and_text_labels_are_not_prose(answer):
    res = extract_answers(pl.DataFrame({"id": ["a"], "reference": [f"\\boxed{{{answer}}}"]}))
    assert res.kept["answer"].to_list() == [answer]
    assert res.removed.height == 0


def test_extract_answers_step_count_and_summary():
    df = pl.DataFrame({"id": ["a", "b"], "reference": ["\\boxed{1}", None]})
    res = extract_answers(df)
    assert res.count.step == "answer-check"
    assert (res.count.rows_in, res.count.rows_out) == (2, 1)
    assert res.count.reason == "reference answer missing, prose, or not parseable by math-verify"


def test_extract_answers_reads_the_named_column_and_numeric_references():
    df = pl.DataFrame({"id": ["a", "b"], "solution": [42, -3]})
    res = extract_answers(df, reference_column="solution")
    assert res.kept["answer"].to_list() == ["42", "-3"]
    assert res.kept.columns == ["id", "solution", "answer"]


def test_extract_answers_names_the_missing_column():
    with pytest.raises(
        InputError, match=r"^extract_answers input: missing column\(s\) reference \(has: id\)"
    ):
        extract_answers(pl.DataFrame({"id": ["a"]}))


def test_the_answer_column_is_text_even_when_no_answer_is_found():
    res = extract_answers(
        pl.DataFrame({"id": ["a"], "reference": [None]}, schema={"id": pl.String, "reference": pl.String})
    )
    assert res.removed.schema["answer"] == pl.String
    assert res.kept.schema["answer"] == pl.String and res.kept.height == 0


def test_prose_words_are_matched_case_insensitively_against_math_words():
    assert "sin" in answers._MATH_WORDS  # the precondition of the case-folding check below
    res = extract_answers(pl.DataFrame({"id": ["a"], "reference": ["\\boxed{2 SIN x}"]}))
    assert res.kept["answer"].to_list() == ["2 SIN x"]


# --- text: normalisation and tokens -----------------------------------------------------------------


def test_normalized_key_folds_width_ligatures_case_and_spacing():
    texts = pl.DataFrame({"t": ["  Ｈｅｌｌｏ\t\n  WORLD  ﬁne ", "hello world fine", "a\u00a0b", None]})
    out = texts.select(normalized(pl.col("t")))["t"].to_list()
    assert out == ["hello world fine", "hello world fine", "a b", None]


def test_word_tokens_flatten_lowercase_words_with_offsets():
    tokens, offsets = word_tokens(pl.Series([None, "", "Hello, WORLD!", "x_1 — ÉTÉ 42"]))
    assert tokens.to_list() == ["hello", "world", "x_1", "été", "42"]
    assert offsets.tolist() == [0, 0, 0, 2, 5]
    assert offsets.dtype == np.int64


def test_word_lists_per_document():
    assert word_lists(pl.Series([None, "", "Hi, there!"])) == [[], [], ["hi", "there"]]


@pytest.mark.parametrize(
    "words,n,shingles",
    [
        ([], 3, []),
        (["a"], 3, ["a"]),
        (["a", "b"], 3, ["a b"]),
        (["a", "b", "c"], 3, ["a b c"]),
        (["a", "b", "c", "d"], 3, ["a b c", "b c d"]),
        (["a", "b", "c"], 1, ["a", "b", "c"]),
    ],
)
def test_shingle_strings(words, n, shingles):
    assert shingle_strings(words, n) == shingles


# --- text: hashes -----------------------------------------------------------------------------------

MASK = (1 << 64) - 1


def _fmix64_reference(h: int) -> int:
    """MurmurHash3's fmix64, in Python integers."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def test_fmix64_is_murmurhash3s_finaliser():
    values = [0, 1, 2, 0xFF, 1 << 32, 0x0123456789ABCDEF, MASK, 0x8000000000000000, 0x9E3779B97F4A7C15]
    out = fmix64(np.array(values, dtype=np.uint64))
    assert out.dtype == np.uint64
    assert [int(v) for v in out] == [_fmix64_reference(v) for v in values]
    assert _fmix64_reference(0) == 0 and int(out[1]) != 1


def test_token_hashes_are_equal_exactly_for_equal_case_folded_tokens():
    hashes, offsets = token_hashes(pl.Series(["The cat", None, "the CAT sat"]))
    assert offsets.tolist() == [0, 2, 2, 5]
    assert hashes.dtype == np.uint64
    assert hashes[0] == hashes[2] and hashes[1] == hashes[3]
    assert len({int(h) for h in hashes}) == 3


def _ngram_reference(texts: list[str | None], n: int, short: bool) -> tuple[list[int], list[int]]:
    """Offsets and hashes by the documented formula: h = sum(t_j * G^(m-1-j)) mod 2^64 over an
    n-gram's m token hashes (m = n, or a short text's length)."""
    per_doc: list[list[int]] = []
    for text in texts:
        tok, _ = token_hashes(pl.Series([text], dtype=pl.String))
        words = [int(v) for v in tok]
        grams = [words[i : i + n] for i in range(len(words) - n + 1)]
        if short and 0 < len(words) < n:
            grams = [words]
        hashes = []
        for gram in grams:
            h = 0
            for w in gram:
                h = (h * int(GOLDEN64) + w) & MASK
            hashes.append(h)
        per_doc.append(hashes)
    offsets = [0]
    for hs in per_doc:
        offsets.append(offsets[-1] + len(hs))
    return offsets, [h for hs in per_doc for h in hs]


TEXTS = [
    "one",
    "alpha beta",
    None,
    "a b c",
    "",
    "the quick brown fox jumps over the lazy dog",
    "w x y z",
    "p q",
    "solo",
]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("short", [True, False])
@pytest.mark.parametrize("order", ["as-is", "reversed", "short-last", "one-text"])
def test_ngram_hashes_follow_the_polynomial_per_document(n, short, order):
    texts = {
        "as-is": TEXTS,
        "reversed": TEXTS[::-1],
        "short-last": ["the quick brown fox jumps over", "x y"],
        "one-text": ["a b c"],
    }[order]
    offsets, hashes = ngram_hashes(pl.Series(texts, dtype=pl.String), n, short=short)
    want_offsets, want_hashes = _ngram_reference(texts, n, short)
    assert offsets.dtype == np.int64 and offsets.tolist() == want_offsets
    assert hashes.dtype == np.uint64
    assert [int(h) for h in hashes] == want_hashes


def test_ngram_hashes_accept_a_reused_tokenisation():
    series = pl.Series(TEXTS, dtype=pl.String)
    tokens = token_hashes(series)
    for n in (2, 5):
        a_off, a_hash = ngram_hashes(series, n)
        b_off, b_hash = ngram_hashes(tokens, n)
        assert a_off.tolist() == b_off.tolist() and a_hash.tolist() == b_hash.tolist()


def test_equal_ngrams_hash_equally_across_documents():
    offsets, hashes = ngram_hashes(pl.Series(["x the cat sat y", "the cat sat"]), 3)
    assert offsets.tolist() == [0, 3, 4]
    assert hashes[1] == hashes[3]
    assert len({int(h) for h in hashes[:3]}) == 3


def test_without_short_a_text_shorter_than_n_has_no_ngrams():
    offsets, hashes = ngram_hashes(pl.Series(["a b", "c d e f"]), 3, short=False)
    assert offsets.tolist() == [0, 0, 2]
    assert len(hashes) == 2


@pytest.mark.parametrize("texts", [[], [None, ""], ["a b"]])
def test_no_ngrams_gives_zero_offsets_and_an_empty_hash_array(texts):
    offsets, hashes = ngram_hashes(pl.Series(texts, dtype=pl.String), 3, short=False)
    assert offsets.tolist() == [0] * (len(texts) + 1)
    assert hashes.dtype == np.uint64 and hashes.shape == (0,)


def test_by_default_a_short_text_is_one_ngram_of_all_its_words():
    offsets, hashes = ngram_hashes(pl.Series(["a b", "c d e f"]), 3)
    assert offsets.tolist() == [0, 1, 3]
    assert [int(h) for h in hashes[:1]] == _ngram_reference(["a b"], 3, short=True)[1]


def test_unparseable_answers_are_quoted_to_60_characters():
    answer = "\\$" * 31  # 62 characters that math-verify cannot read
    res = extract_answers(pl.DataFrame({"id": ["a"], "reference": [f"\\boxed{{{answer}}}"]}))
    assert removed_reasons(res) == {"a": "answer '" + "\\\\$" * 30 + "' (boxed) not parseable by math-verify"}


def test_the_reason_column_is_text_even_when_every_row_is_kept():
    res = extract_answers(pl.DataFrame({"id": ["a"], "reference": ["\\boxed{1}"]}))
    assert res.removed.height == 0
    assert res.removed.schema["reason"] == pl.String
