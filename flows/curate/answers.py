"""Answer extraction from reference solutions, kept only when the rule checker (math-verify) parses it.

Extraction order: the last \\boxed{...} (balanced braces), then "the (final) answer is ...", then the
last mathematical expression of the text (the last $...$ span, else the last number). A reference that
is already a bare answer ("42", "\\frac{1}{2}") is its own answer. An answer made of words ("blue")
is rejected before math-verify, which would read it as a product of symbols.

Only math items are checked (rows of domain math, or every row of a frame without a ``domain``
column); items of other domains pass with no `answer`: their references are programs or patches.

Not a flow: a curation step, kept beside the flow that runs it (flows/curate/flow.py).
"""

from __future__ import annotations

import re
import threading
from contextlib import nullcontext
from functools import lru_cache

import polars as pl

from flows.curate.result import StepResult, split_by_reason
from flows.schema import require_columns

_ANSWER_IS = re.compile(r"(?:final\s+)?answer\s*(?:is|:|=)\s*:?\s*(.+?)(?:\.\s|\.?$|\n)", re.IGNORECASE)
_INLINE_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_MATH_WORDS = {
    "sin",
    "cos",
    "tan",
    "cot",
    "sec",
    "csc",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "log",
    "ln",
    "lg",
    "exp",
    "sqrt",
    "pi",
    "inf",
    "infty",
    "mod",
    "gcd",
    "lcm",
    "max",
    "min",
    "det",
    "and",
    "or",
    "deg",
    "cm",
    "km",
    "kg",
}
_TEXT = re.compile(r"\\(?:text|mathrm|textbf|operatorname)\{[^}]*\}")  # units, labels: not prose
_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:/\d+)?")
_WORDLIKE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}")  # a prose word, not a LaTeX command
_PROSE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")  # in an answer: "xy" may be a product, "blue" is not


def reference_box(text: str) -> str | None:
    """A reference solution's answer: the content of its last \\boxed{...} or \\fbox{...}, nested braces
    balanced; None when that last box is unbalanced or empty (a broken reference: an earlier box is never
    taken instead). Not verifiers.format.last_boxed, which reads a response's last *complete* box (an
    unfinished box at the end of a response leaves the one before it as the answer)."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for i in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[brace + 1 : i].strip() or None
    return None  # unbalanced: a broken reference, not an answer


def extract_answer(reference: str | None) -> tuple[str | None, str]:
    """(answer, how) — how is boxed, answer-is, expression or bare; answer None when nothing found."""
    if not reference or not reference.strip():
        return None, "empty"
    text = reference.strip()
    if (boxed := reference_box(text)) is not None:
        return boxed, "boxed"
    if "\\boxed" in text or "\\fbox" in text:
        return None, "unbalanced-boxed"
    if matches := _ANSWER_IS.findall(text):
        return matches[-1].strip().strip("$ ").rstrip("."), "answer-is"
    if len(text) <= 40 and "\n" not in text and not _WORDLIKE.search(text):
        return text.strip("$ "), "bare"
    if spans := _INLINE_MATH.findall(text):
        return next(s for s in spans[-1] if s).strip(), "expression"
    if numbers := _NUMBER.findall(text):
        return numbers[-1].replace(",", ""), "expression"
    return None, "none"


@lru_cache(maxsize=65536)
def parses(answer: str) -> bool:
    """True if math-verify extracts a mathematical object from the answer.

    Plain numbers (most answers) are decided without it: math-verify always parses them, and a parse
    costs milliseconds. Verdicts are cached: datasets repeat the same small answers many times.
    """
    if _PLAIN_NUMBER.fullmatch(answer.strip()):
        return True
    # heavy: math_verify
    from math_verify import parse
    from math_verify.errors import TimeoutException

    from verifiers.deadline import deadline

    # The deadline is a signal, which only the main thread may set; in worker threads the answers parsed
    # here are short extracted strings, so they run without one.
    main = threading.current_thread() is threading.main_thread()
    try:
        with deadline(5) if main else nullcontext():
            return bool(parse(f"${answer}$", parsing_timeout=None))
    except (Exception, TimeoutException):  # noqa: BLE001 - a parser crash or a timeout: "not parseable"
        return False


def is_math(df: pl.DataFrame) -> list[bool]:
    """Which rows the math rules apply to: those of domain math, or every row of a frame without a
    ``domain`` column (a file of math items)."""
    if "domain" not in df.columns:
        return [True] * df.height
    return df["domain"].cast(pl.String).fill_null("math").eq("math").to_list()


def extract_answers(df: pl.DataFrame, reference_column: str = "reference") -> StepResult:
    """Keep rows whose reference yields an answer math-verify parses; adds an `answer` column."""
    require_columns(df, [reference_column], where="extract_answers input")
    answers, reasons = [], []
    for ref, math in zip(df[reference_column].cast(pl.String).to_list(), is_math(df), strict=True):
        if not math:
            answers.append(None)
            reasons.append(None)
            continue
        answer, how = extract_answer(ref)
        answers.append(answer)
        if answer is None:
            reasons.append(
                {
                    "empty": "no reference solution",
                    "unbalanced-boxed": "unbalanced \\boxed{ in the reference",
                }.get(how, "no answer found in the reference")
            )
        elif prose := [w for w in _PROSE.findall(_TEXT.sub("", answer)) if w.lower() not in _MATH_WORDS]:
            reasons.append(
                f"answer {answer[:60]!r} ({how}) is words ({prose[0]!r}), not a rule-checkable expression"
            )
        elif not parses(answer):
            reasons.append(f"answer {answer[:60]!r} ({how}) not parseable by math-verify")
        else:
            reasons.append(None)
    out = df.with_columns(pl.Series("answer", answers, dtype=pl.String))
    return split_by_reason(
        out,
        pl.Series(reasons, dtype=pl.String),
        "answer-check",
        "reference answer missing, prose, or not parseable by math-verify",
    )
