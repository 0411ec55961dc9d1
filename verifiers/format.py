"""Final-answer extraction from long chain-of-thought, and the answer-format check.

A reasoning model writes thousands of tokens before its answer, so extraction looks only after the
last ``</think>`` and prefers, in order: the last ``\\boxed{...}`` (braces matched, so nested LaTeX
such as ``\\boxed{\\frac{1}{2}}`` survives), the last "the answer is ..." phrase, then the final line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Method = Literal["boxed", "phrase", "last_line"]

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_PHRASE = re.compile(
    r"(?:final\s+answer|the\s+answer|answer)\s*(?:is|:|=)\s*:?\s*(?P<ans>[^\n]+)",
    re.IGNORECASE,
)
_INLINE_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?")
_LAST_LINE_MAX = 40  # a final line longer than this is prose, not an answer
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class Extraction:
    text: str  # the answer, stripped of delimiters, ready to be parsed as LaTeX
    method: Method


def final_section(response: str) -> str:
    """The part after the last ``</think>``: the reasoning before it is not the answer."""
    return response.rsplit(_THINK_CLOSE, 1)[-1]


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` with balanced braces; None if absent or
    unclosed. Also accepts the brace-less ``\\boxed 5`` form."""
    start = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    while start >= 0:
        cmd = next(c for c in _BOX_COMMANDS if text.startswith(c, start))
        i = start + len(cmd)
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            content = _balanced(text, i)
            if content is not None and content.strip():
                return content.strip()
        elif i < len(text) and i > start + len(cmd):  # "\boxed 5": a single token follows
            token = re.match(r"[^\s$.,]+", text[i:])
            if token:
                return token.group(0)
        # unclosed or empty: try an earlier box
        start = max(text.rfind(c, 0, start) for c in _BOX_COMMANDS)
    return None


def _balanced(text: str, open_index: int) -> str | None:
    depth = 0
    i = open_index
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            i += 2  # an escaped brace such as \{ does not nest
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[open_index + 1 : i]
        i += 1
    return None


def _strip_delimiters(answer: str) -> str:
    answer = answer.strip()
    match = _INLINE_MATH.fullmatch(answer)
    if match:
        answer = next(g for g in match.groups() if g is not None)
    boxed = last_boxed(answer)
    if boxed is not None:
        answer = boxed
    answer = answer.strip().strip("*").strip()
    return answer.rstrip(".").strip()


def _from_phrase(text: str) -> str | None:
    matches = list(_PHRASE.finditer(text))
    if not matches:
        return None
    raw = matches[-1].group("ans")
    math = _INLINE_MATH.search(raw)
    if math:
        return next(g for g in math.groups() if g is not None).strip()
    # "The answer is 42 because ..." -> cut at the first sentence end that is not a decimal point,
    # then at the first prose word after the answer ("12 apples" -> "12")
    raw = re.split(r"(?<!\d)\.(?!\d)|\.\s", raw, maxsplit=1)[0]
    tokens = raw.split()
    prose = next(
        (i for i, tok in enumerate(tokens) if i > 0 and re.fullmatch(r"[A-Za-z]{3,}[,;:]?", tok)), None
    )
    if prose is not None:
        raw = " ".join(tokens[:prose])
    return _strip_delimiters(raw) or None


def _from_last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[-1]
    maths = _INLINE_MATH.findall(line)
    if maths:
        return next(g for g in maths[-1] if g).strip()
    stripped = _strip_delimiters(line)
    if len(stripped) <= _LAST_LINE_MAX and not re.search(r"[A-Za-z]{4,}\s+[A-Za-z]{2,}", stripped):
        return stripped or None  # short and not prose: an answer on its own line
    numbers = _NUMBER.findall(line)
    return numbers[-1].rstrip(",") if numbers else None


def extract_answer(response: str) -> Extraction | None:
    """The model's final answer, or None when the response has none that can be found."""
    if not isinstance(response, str) or not response.strip():
        return None
    text = final_section(response)
    boxed = last_boxed(text)
    if boxed:
        return Extraction(boxed, "boxed")
    phrase = _from_phrase(text)
    if phrase:
        return Extraction(phrase, "phrase")
    line = _from_last_line(text)
    return Extraction(line, "last_line") if line else None


def think_ok(response: str, *, require_think: bool = False) -> tuple[bool, str]:
    """``<think>`` tags, when present (or required), opened at most once, closed once, in order."""
    opens, closes = response.count(_THINK_OPEN), response.count(_THINK_CLOSE)
    if require_think and closes == 0:
        return False, "missing </think>"
    if opens > 1 or closes > 1 or (opens == 1 and closes != 1):
        return False, "unbalanced <think> tags"
    if opens == 1 and response.index(_THINK_OPEN) > response.index(_THINK_CLOSE):
        return False, "</think> before <think>"
    return True, "ok"


def format_ok(response: str, *, require_think: bool = False) -> tuple[bool, str]:
    """Does a math response follow the required answer format? Returns (ok, reason).

    Required: well-formed ``<think>`` tags (`think_ok`) and the final answer in ``\\boxed{}`` after
    the reasoning.
    """
    if not isinstance(response, str):
        return False, "response is not text"
    ok, why = think_ok(response, require_think=require_think)
    if not ok:
        return ok, why
    if last_boxed(final_section(response)) is None:
        return False, "no \\boxed{} answer after the reasoning"
    return True, "ok"
