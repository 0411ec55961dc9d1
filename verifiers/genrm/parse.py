"""Reading a verdict out of a judge's free text, robustly and never by guessing.

A judge may think aloud, restate the rubric ("5: correct ..., 1: no final answer"), use markdown or
fractions. The rules: the LAST explicit statement wins ("Grade: 4", "grade of **4**", "4/5", "[[4]]",
"Verdict: [[B]]", "[[A]]"); a text with no explicit statement, or only out-of-range numbers, is None,
which the judges count as a failed judgment (retried, then an error), never as a low grade.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

_GRADE = re.compile(
    r"(?:grade|score|rating)\s*(?:is|of|=|:)?\s*[*_\s\"']*\s*(\d+(?:\.\d+)?)(?!\s*[-–:])"  # Grade: 4, score of **4**
    r"|\[\[\s*(\d+(?:\.\d+)?)\s*\]\]"  # [[4]]
    r"|\b(\d+(?:\.\d+)?)\s*/\s*5\b",  # 4/5
    re.IGNORECASE,
)
_VERDICT = re.compile(
    r"(?:verdict|winner|better(?:\s+response)?(?:\s+is)?)\s*[:=]?\s*[*_\s\"']*\[*\s*(?:response\s+)?([ABC])\b\s*\]*"
    r"|\[\[\s*([ABC]|tie)\s*\]\]",
    re.IGNORECASE,
)


def parse_grade(text: str | None, low: int = 1, high: int = 5) -> int | None:
    """The judge's grade in [low, high] (the last explicit one), else None."""
    if not text:
        return None
    found = None
    for m in _GRADE.finditer(text):
        raw = next(g for g in m.groups() if g is not None)
        value = float(raw)
        if value.is_integer() and low <= value <= high:
            found = int(value)
    return found


def parse_verdict(text: str | None) -> str | None:
    """'A', 'B' or 'C' (a tie) from the judge's last explicit verdict, else None."""
    if not text:
        return None
    found = None
    for m in _VERDICT.finditer(text):
        raw = next(g for g in m.groups() if g is not None).upper()
        found = "C" if raw == "TIE" else raw
    return found


def expected_grade(
    tokens: Sequence[tuple[str, Mapping[str, float]]], grade: int, low: int = 1, high: int = 5
) -> float | None:
    """The judge's grade weighted by its own probabilities (G-Eval, Liu et al. 2023): at the token that
    wrote ``grade`` (the last such token, as `parse_grade` reads the last statement), the mean of the
    grades ``low``-``high`` under that token's top alternatives (``tokens``: each written token with its
    alternatives' logprobs), renormalised over them. A judge sure of its grade gives the grade; one torn
    between 4 and 5 gives about 4.5, so answers a sampled grade would tie are told apart. None when no
    written token is that grade."""
    for token, alternatives in reversed(tokens):
        if token.strip() != str(grade):
            continue
        mass: dict[int, float] = {}
        for alt, logprob in alternatives.items():
            text = alt.strip()  # "4" and " 4" are two tokens of one grade
            if text.isdigit() and low <= int(text) <= high:
                mass[int(text)] = mass.get(int(text), 0.0) + math.exp(logprob)
        if not mass:  # no alternatives sent for it
            return float(grade)
        return sum(g * p for g, p in mass.items()) / sum(mass.values())
    return None
