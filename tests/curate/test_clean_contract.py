"""The cleaning step's contract: each rejection reason word for word, multiple-choice parsing and its
open-ended rewrite (by rule and by a model endpoint), and the metadata and summary it records."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.curate.clean import clean, encoding_problem, latex_problem, open_ended, parse_multiple_choice
from flows.errors import InputError
from verifiers.endpoint import Endpoint

SUMMARY = "empty, garbled, broken LaTeX, multi-part, proof or binary items; {} multiple-choice reformulated"
MC = "Which of the following is a prime?\n(A) 4\n(B) 6\n(C) 7\n(D) 9"


def frame(pairs, metadata=None):
    data = {
        "id": [f"i{k}" for k in range(len(pairs))],
        "prompt": [p for p, _ in pairs],
        "reference": [r for _, r in pairs],
    }
    if metadata is not None:
        data["metadata"] = metadata
    return pl.DataFrame(data, schema={k: pl.String for k in data})


def reason(prompt, reference):
    """The reason clean() gives for one item, or None when it keeps it."""
    res = clean(frame([(prompt, reference)]))
    return res.removed["reason"][0] if res.removed.height else None


# -- rejection reasons ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "reference", "why"),
    [
        ("   \n", "4", "empty prompt"),
        (None, "4", "empty prompt"),
        ("", "", "empty prompt"),  # the prompt is checked first
        ("What is 2+2?", None, "empty reference"),
        ("What is 2+2?", "\t", "empty reference"),
        ("What is 2\x07+2?", "4", "encoding garbage (control characters) in prompt"),
        ("What is 2+2?", "4\x1b", "encoding garbage (control characters) in reference"),
        (
            "What is 2+2?",
            "It\u2019s 4 â€” four",
            "encoding garbage (mojibake: UTF-8 read as Latin-1) in reference",
        ),
        ("What is 2+2?", "\ufffd4", "encoding garbage (U+FFFD replacement characters) in reference"),
        ("What is 2+2?", "$$4", "broken LaTeX: unbalanced $$ in reference"),
        ("What is 2+2?", "\\[4", "broken LaTeX: unbalanced \\[ \\] in reference"),
        # the prompt is examined before the reference, and encoding before LaTeX
        ("What is $2\ufffd", "$$4", "encoding garbage (U+FFFD replacement characters) in prompt"),
        ("Show that $n^2 \\ge 0$ for every real $n$.", "Squares are non-negative.", "proof question"),
        ("Demonstrate that 7 divides 49.", "49 = 7 * 7", "proof question"),
        ("What is 2+2? Justify your answer.", "4", "proof question"),
        ("(i) Find x if x+1=2. (ii) Find y if 2y=4.", "1 and 2", "multiple sub-problems"),
        ("Solve: a) x+1=2 and b) 2y=4.", "1 and 2", "multiple sub-problems"),
        ("Part (a): find x. Part (b): find y.", "1 and 2", "multiple sub-problems"),
        ("Compute:\n1. 2+2\n2. 3+3", "4 and 6", "multiple sub-problems"),
        ("Answer yes or no: is 17 prime?", "17", "binary question (true/false, yes/no)"),
        ("True/false: 2 is even.", "1", "binary question (true/false, yes/no)"),
        ("Is 17 prime?", "\\boxed{\\text{Yes}}", "binary question (true/false, yes/no)"),
        ("Is 18 prime?", "\\boxed{\\text{No.}}", "binary question (true/false, yes/no)"),
        ("Is 2+2=5?", "The answer is incorrect.", "binary question (true/false, yes/no)"),
    ],
)
def test_rejection_reason_names_the_problem_and_the_field(prompt, reference, why):
    assert reason(prompt, reference) == why


@pytest.mark.parametrize(
    ("prompt", "reference"),
    [
        ("Line one\n\tLine two\r\nWhat is 2+2?", "4"),  # tab, newline and CR are not control garbage
        ("In how many ways can a board approve 3 of 5 bills?", "\\boxed{10}"),  # "approve" is no proof
        ("Is $x = 2$ a root of $x^2 - 4$? Give the other root.", "\\boxed{-2}"),
        ("What is $\\text{yes}$ spelled backwards?", "\\boxed{\\text{sey}}"),
    ],
)
def test_usable_items_are_kept(prompt, reference):
    assert reason(prompt, reference) is None


def test_encoding_problem_names_control_characters():
    assert encoding_problem("x\x00y") == "encoding garbage (control characters)"
    assert encoding_problem("x\x7f") == "encoding garbage (control characters)"
    assert encoding_problem("Ünïcödé and 日本 are fine\n") is None


# -- LaTeX delimiters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Evaluate $$x^2", "broken LaTeX: unbalanced $$"),
        ("$$a$$ and $$b", "broken LaTeX: unbalanced $$"),
        ("Let $5x = 10. Find x.", "broken LaTeX: unbalanced $"),  # "$5x" is math, not money
        ("It costs$5 now.", "broken LaTeX: unbalanced $"),  # money needs a space before the $
        ("Solve \\(x^2 = 4.", "broken LaTeX: unbalanced \\( \\)"),
        ("Solve \\[x^2 = 4.", "broken LaTeX: unbalanced \\[ \\]"),
        ("Solve x^2 = 4.\\]", "broken LaTeX: unbalanced \\[ \\]"),
        ("Find $x}{y$.", "broken LaTeX: '}' without '{'"),
        ("Find $\\frac{1}{2}}{$.", "broken LaTeX: '}' without '{'"),
        ("Find $\\frac{{1}{2}$.", "broken LaTeX: unbalanced braces"),
        ("$\\begin{align}x\\end{align*}$", "broken LaTeX: \\begin/\\end mismatch"),
        ("$\\begin{matrix}1\\end{matrix}\\end{matrix}$", "broken LaTeX: \\begin/\\end mismatch"),
        ("$\\begin{cases}1\\end{array}$", "broken LaTeX: \\begin/\\end mismatch"),
        ("The set $\\{x\\}$ has $\\{ y", "broken LaTeX: unbalanced $"),
        ("It costs $3 or $4. Find $x.", "broken LaTeX: unbalanced $"),
    ],
)
def test_each_latex_imbalance_has_its_own_reason(text, why):
    assert latex_problem(text) == why


@pytest.mark.parametrize(
    "text",
    [
        "$$x^2 + 1$$ and $$y$$",
        "$40 is shared by 8 friends. How much does each get?",  # money at the start
        "A car costs $12,500.75, a bike $300; what fraction is $\\frac{300}{12500.75}$?",
        "The price (now $8) rose. What was it before, if $p = 6$?",
        "Each ticket is $5! How many for $x$ dollars?",
        "\\(a\\) and \\[b\\] and \\(c\\)",
        "The set $\\{x, y\\}$ has two elements.",  # escaped braces do not count
        "Use \\} as a closing brace and \\{ as an opening one.",
        "Pay \\$5 for $x$ apples.",  # an escaped dollar is not a delimiter
        "$\\begin{pmatrix}\\begin{matrix}1\\end{matrix}\\end{pmatrix}$",
        "$\\begin{align*}x &= 1\\end{align*}$",
    ],
)
def test_balanced_latex_and_money_are_accepted(text):
    assert latex_problem(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "What is $2 + 3$?",  # "$2 " looks like money, yet the dollars pair up as math
        "Compute $3 \\times 4$ and $x$.",
        "The set $\\{1, 2\\}$ has two elements.",
        "A pen costs $3 and $x$ pens cost $3x$ in all.",
        "The symbol $\\$$ denotes dollars.",  # an escaped dollar inside math
    ],
)
def test_math_that_starts_like_money_or_holds_an_escaped_dollar_is_balanced(text):
    assert latex_problem(text) is None
    assert reason(text, "4") is None


# -- multiple choice -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "marks",
    [
        ["(A)", "(B)", "(C)"],
        ["A.", "B.", "C."],
        ["A)", "B)", "C)"],
        ["A:", "B:", "C:"],
        ["\\textbf{(A)}", "\\textbf{(B)}", "\\textbf{(C)}"],
        ["\\mathrm{(A)}", "\\mathrm{(B)}", "\\mathrm{(C)}"],
        ["\\text{(A)}", "\\text{(B)}", "\\text{(C)}"],
    ],
)
def test_every_option_marker_style_is_parsed(marks):
    prompt = "How many sides has a triangle?\n" + "\n".join(
        f"{m} {v}" for m, v in zip(marks, "345", strict=True)
    )
    mc = parse_multiple_choice(prompt)
    assert mc.stem == "How many sides has a triangle?"
    assert mc.options == {"A": "3", "B": "4", "C": "5"}


def test_option_text_is_cleaned_of_spacing_commands_dollars_and_ties():
    prompt = (
        "What is $2+3$? $\\textbf{(A)}~4\\qquad\\textbf{(B)}\\ 5 \\quad apples\\qquad"
        "\\textbf{(C)}\\ x~+~1;\\qquad\\textbf{(D)}\\ 6\n\n\t 7.$"
    )
    mc = parse_multiple_choice(prompt)
    assert mc.stem == "What is $2+3$?"
    assert list(mc.options) == ["A", "B", "C", "D"]
    assert mc.options == {"A": "4", "B": "5 apples", "C": "x + 1", "D": "6 7"}


def test_capital_x_in_stem_and_options_is_kept():
    mc = parse_multiple_choice("Which equals X + X + X\n(A) 3X\n(B) X\n(C) 2X")
    assert mc.stem == "Which equals X + X + X"
    assert mc.options == {"A": "3X", "B": "X", "C": "2X"}


def test_options_run_from_a_through_e_in_order():
    mc = parse_multiple_choice("Pick one. (A) 1 (B) 2 (C) 3 (D) 4 (E) 5")
    assert mc.options == {"A": "1", "B": "2", "C": "3", "D": "4", "E": "5"}


@pytest.mark.parametrize(
    "prompt",
    [
        "Which is prime? (A) 4 (B) 7",  # two options
        "Which is prime? (A) 4 (C) 7 (B) 9 (D) 8",  # out of order
        "Which is prime? (B) 4 (C) 7 (D) 9",  # no option A
        "(A) 4 (B) 7 (C) 9",  # no stem
        "Which is prime? (A) 4 (B) ; (C) 9",  # an empty option
        "Which is prime? (A) 4 (B) $\\qquad$ (C) 9",  # an option that is only layout
    ],
)
def test_not_multiple_choice(prompt):
    assert parse_multiple_choice(prompt) is None


def test_letters_before_the_options_do_not_hide_them():
    mc = parse_multiple_choice("In triangle ABC, side C: 5 cm. Its perimeter? (A) 12 (B) 13 (C) 14")
    assert mc.stem == "In triangle ABC, side C: 5 cm. Its perimeter?"
    assert mc.options == {"A": "12", "B": "13", "C": "14"}


def test_a_run_without_a_stem_gives_way_to_a_later_one():
    mc = parse_multiple_choice("(A) and (B) are points. Options: (A) 1 (B) 2 (C) 3")
    assert mc.stem == "(A) and (B) are points. Options:"
    assert mc.options == {"A": "1", "B": "2", "C": "3"}


@pytest.mark.parametrize(
    ("stem", "question"),
    [
        ("Which of the following numbers divides 12?", "What divides 12?"),
        ("Which of the following values are integers?", "What are integers?"),
        ("which of the following expressions is odd?", "What is odd?"),
        ("For n = 3, which of the following is odd?", "For n = 3, what is odd?"),
        ("Which number is prime? (Select all that apply)", "Which number is prime?"),
        ("Which of the following is prime (choose one)?", "What is prime?"),
        ("Name a prime (PICK ONE).", "Name a prime."),
        ("How many primes are below 10?", "How many primes are below 10?"),
    ],
)
def test_open_ended_rewrite(stem, question):
    assert open_ended(stem) == question


@pytest.mark.parametrize(
    "reference",
    [
        "C",
        "(C)",
        "\\boxed{C}",
        "\\boxed{(C)}",
        "\\boxed{\\text{(C)}}",
        "\\boxed{\\textbf{C}}",
        "The answer is C.",
        "\\boxed{7}",  # the option's text
        "The answer is 7.",
    ],
)
def test_chosen_option_from_a_letter_or_the_option_text(reference):
    res = clean(frame([(MC, reference)]))
    assert res.kept["prompt"].to_list() == ["What is a prime?"]
    assert res.kept["reference"].to_list() == ["\\boxed{7}"]


@pytest.mark.parametrize("reference", ["\\boxed{8}", "The answer is (E).", "See the figure."])
def test_answer_that_is_no_option_is_rejected(reference):
    res = clean(frame([(MC, reference)]))
    assert res.kept.height == 0
    assert res.removed["reason"].to_list() == ["multiple choice whose answer option cannot be resolved"]
    assert res.removed["prompt"].to_list() == [MC]  # a rejected item is not rewritten


# -- metadata, summary, schema -------------------------------------------------------------------------


def test_reformulation_is_recorded_in_the_metadata():
    q = "Quelle longueur ? (A) 1 m (B) 2 m (C) 3 m"
    res = clean(
        frame(
            [(q, "(B)"), ("What is 2+2?", "4")], metadata=['{"zeta": 1, "source": "é"}', '{"b": 1, "a": 2}']
        )
    )
    expected = {
        "zeta": 1,
        "source": "é",
        "reformulated": {
            "from": "multiple-choice",
            "by": "rule",
            "prompt": q,
            "reference": "(B)",
            "options": {"A": "1 m", "B": "2 m", "C": "3 m"},
        },
    }
    assert res.kept["metadata"].to_list() == [
        json.dumps(expected, ensure_ascii=False, sort_keys=True),
        '{"b": 1, "a": 2}',  # rows that were not rewritten keep their metadata as it was
    ]


@pytest.mark.parametrize("metadata", [[None], [""]])
def test_missing_metadata_starts_an_empty_record(metadata):
    res = clean(frame([(MC, "C")], metadata=metadata))
    assert list(json.loads(res.kept["metadata"][0])) == ["reformulated"]


def test_frame_without_metadata_column_is_rewritten_without_one():
    res = clean(frame([(MC, "C"), ("What is 2+2?", "4")]))
    assert res.kept.columns == ["id", "prompt", "reference"]
    assert res.kept["prompt"].to_list() == ["What is a prime?", "What is 2+2?"]


def test_custom_column_names():
    df = pl.DataFrame({"question": [MC], "solution": ["C"]})
    res = clean(df, prompt_column="question", reference_column="solution")
    assert res.kept.rows() == [("What is a prime?", "\\boxed{7}")]


def test_missing_column_is_reported_with_where_it_was_needed():
    with pytest.raises(InputError, match=r"^clean input: missing column\(s\) reference \(has: id, prompt\)$"):
        clean(pl.DataFrame({"id": ["a"], "prompt": ["What is 2+2?"]}))


def test_summary_counts_the_reformulations():
    res = clean(frame([(MC, "C"), (MC, "D"), ("", "4"), ("What is 2+2?", "4")]))
    assert (res.count.step, res.count.rows_in, res.count.rows_out) == ("clean", 4, 3)
    assert res.count.reason == SUMMARY.format(2)
    assert clean(frame([("What is 2+2?", "4")])).count.reason == SUMMARY.format(0)


def test_output_columns_stay_strings_even_when_all_null():
    res = clean(frame([(None, None)], metadata=[None]))
    assert res.removed.schema["prompt"] == pl.String
    assert res.removed.schema["reference"] == pl.String
    assert res.removed.schema["metadata"] == pl.String
    kept = clean(frame([("What is 2+2?", "4")])).removed
    assert kept.height == 0 and kept.schema["reason"] == pl.String


# -- the model endpoint --------------------------------------------------------------------------------


def test_llm_rewrite_request_and_reply(openai_server):
    def model(body):
        question = body["messages"][-1]["content"].split("Question:\n", 1)[1]
        return ["  What prime is below 8 and above 6?\n"] if "(D) 9" in question else ["Name an even number."]

    url, seen = openai_server(model)
    other = "Which is even? (A) 3 (B) 5 (C) 8"
    df = frame([(MC, "C"), ("What is 2+2?", "4"), (other, "C")], metadata=["{}", "{}", "{}"])
    res = clean(df, endpoint=Endpoint(url=url, model="m", retries=0))
    assert res.kept["prompt"].to_list() == [
        "What prime is below 8 and above 6?",
        "What is 2+2?",
        "Name an even number.",
    ]
    assert res.kept["reference"].to_list() == ["\\boxed{7}", "4", "\\boxed{8}"]
    assert len(seen) == 2  # only the multiple-choice rows are sent
    body = next(b for b in seen if "(D) 9" in b["messages"][0]["content"])
    assert body["temperature"] == 0.0 and body["max_tokens"] == 512
    assert body["messages"][0]["content"].endswith(
        "whose answer is 7. Do not list options and do not "
        "reveal the answer. Reply with the question only.\n\n"
        f"Question:\n{MC}"
    )
    assert json.loads(res.kept["metadata"][0])["reformulated"]["by"] == "llm:m"
    assert res.kept["metadata"][1] == "{}"


@pytest.mark.parametrize("reply", ["Which is prime? (A) 4 (B) 6 (C) 7", "   \n"])
def test_llm_reply_that_is_still_multiple_choice_or_blank_is_ignored(openai_server, reply):
    url, _ = openai_server(lambda body: [reply])
    res = clean(frame([(MC, "C")], metadata=["{}"]), endpoint=Endpoint(url=url, model="m", retries=0))
    assert res.kept["prompt"].to_list() == ["What is a prime?"]  # the rule's rewrite
    assert res.kept["reference"].to_list() == ["\\boxed{7}"]
    assert json.loads(res.kept["metadata"][0])["reformulated"]["by"] == "llm:m"


def test_endpoint_is_not_called_without_multiple_choice(openai_server):
    url, seen = openai_server(lambda body: ["unused"])
    res = clean(frame([("What is 2+2?", "4")]), endpoint=Endpoint(url=url, model="m", retries=0))
    assert seen == [] and res.kept["prompt"].to_list() == ["What is 2+2?"]
