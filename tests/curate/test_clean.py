"""Cleaning removes exactly the planted bad items and reformulates multiple choice."""

from __future__ import annotations

import json

import polars as pl

from flows.curate.clean import clean, latex_problem, parse_multiple_choice
from verifiers.endpoint import Endpoint

GOOD = [
    ("What is $\\frac{1}{2} + \\frac{1}{4}$?", "\\boxed{\\frac{3}{4}}"),
    ("A shirt costs $5 and a hat costs $7. How much for both?", "The answer is 12."),
    ("Find $x$ if \\(2x = 8\\).", "x = 4, so \\boxed{4}"),
    ("Évaluer $\\sqrt{16}$ — ünïcode is fine: 日本.", "4"),
    ("Compute \\[\\begin{vmatrix} 1 & 2 \\\\ 3 & 4 \\end{vmatrix}\\].", "\\boxed{-2}"),
    ("How many primes are below " + "ten " * 3000 + "?", "4"),  # very long
]
BAD = [
    ("", "1", "empty prompt"),
    ("What is 1+1?", "  ", "empty reference"),
    ("What is 2\ufffd3?", "6", "encoding garbage (U+FFFD replacement characters) in prompt"),
    (
        "CafÃ© costs 3 euros, what is twice that?",
        "6",
        "encoding garbage (mojibake: UTF-8 read as Latin-1) in prompt",
    ),
    ("Compute $1+\\frac{1}{2}.", "1.5", "broken LaTeX: unbalanced $ in prompt"),
    ("Compute $\\frac{1}{2$.", "0.5", "broken LaTeX: unbalanced braces in prompt"),
    ("Compute \\(x\\) where \\(x = 2.", "2", "broken LaTeX: unbalanced \\( \\) in prompt"),
    ("Find y.", "\\boxed{\\frac{1}{2}", "broken LaTeX: unbalanced braces in reference"),
    ("Prove that there are infinitely many primes.", "Euclid.", "proof question"),
    ("(a) Find x if x+1=2. (b) Find y if 2y=4.", "1, 2", "multiple sub-problems"),
    ("True or false: 7 is prime.", "True", "binary question (true/false, yes/no)"),
    ("Is 91 a prime number?", "\\boxed{No}", "binary question (true/false, yes/no)"),
    (
        "Which is largest? (A) 1 (B) 2 (C) 3",
        "The answer is (E)",
        "multiple choice whose answer option cannot be resolved",
    ),
]


def frame(pairs):
    return pl.DataFrame(
        {
            "id": [f"i{k}" for k in range(len(pairs))],
            "prompt": [p for p, *_ in pairs],
            "reference": [r for _, r, *_ in pairs],
            "metadata": ["{}"] * len(pairs),
        }
    )


def test_clean_drops_exactly_the_planted_items_with_their_reasons():
    res = clean(frame(GOOD + BAD))
    assert res.kept["id"].to_list() == [f"i{k}" for k in range(len(GOOD))]
    assert res.removed["reason"].to_list() == [r for *_, r in BAD]
    assert res.kept["prompt"].to_list() == [p for p, _ in GOOD]  # untouched


def test_multiple_choice_reformulated_by_rule():
    amc = (
        "What is the value of $2+3$? $\\textbf{(A)}\\ 4 \\qquad\\textbf{(B)}\\ 5 \\qquad\\textbf{(C)}\\ 6"
        " \\qquad\\textbf{(D)}\\ 7$"
    )
    plain = "Which of the following is a prime?\nA. 4\nB. 6\nC. 7\nD. 9"
    res = clean(frame([(amc, "\\boxed{\\textbf{(B)}}"), (plain, "The answer is C.")]))
    assert res.kept["prompt"].to_list() == ["What is the value of $2+3$?", "What is a prime?"]
    assert res.kept["reference"].to_list() == ["\\boxed{5}", "\\boxed{7}"]
    meta = json.loads(res.kept["metadata"][0])["reformulated"]
    assert meta["by"] == "rule" and meta["options"] == {"A": "4", "B": "5", "C": "6", "D": "7"}


def test_parse_multiple_choice_needs_three_ordered_options():
    assert parse_multiple_choice("Compute (A) and (B) only.") is None
    assert parse_multiple_choice("Pick: (A) x (B) y (C) z").options == {"A": "x", "B": "y", "C": "z"}
    assert latex_problem("costs $5, or $\\frac{1}{2}$ of it") is None


def rewriter(body: dict) -> list[str]:
    """The 'model': drop the options and turn the stem into a question, by a fixed rule."""
    question = body["messages"][-1]["content"].split("Question:\n", 1)[1]
    return [question.split("(A)")[0].strip().replace("Which of these numbers is", "What number is")]


def test_multiple_choice_rewritten_by_llm_endpoint(openai_server):
    url, seen = openai_server(rewriter)
    q = "Which of these numbers is even? (A) 3 (B) 5 (C) 8"
    res = clean(frame([(q, "(C)")]), endpoint=Endpoint(url=url, model="rewriter"))
    assert res.kept["prompt"].to_list() == ["What number is even?"]
    assert res.kept["reference"].to_list() == ["\\boxed{8}"]
    assert seen[0]["model"] == "rewriter" and "whose answer is 8" in seen[0]["messages"][0]["content"]
    assert json.loads(res.kept["metadata"][0])["reformulated"]["by"] == "llm:rewriter"
