"""Final-answer extraction from long chain-of-thought, and the answer-format check.

A reasoning model writes thousands of tokens before its answer, so extraction looks only after the
last ``</think>``. It reads every ``\\boxed{...}`` there (braces matched, so nested LaTeX such as
``\\boxed{\\frac{1}{2}}`` survives); without a box, every "the answer is ..." phrase; and only when
asked (``last_line=True``, off for RL rewards: an unmarked line is not an answer), the final line.
All candidates are returned so that a verifier can refuse a response that hedges between answers.
`normalize_unicode` folds Unicode look-alikes (full-width digits, superscripts, vulgar fractions) to the
ASCII/LaTeX that math-verify reads.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Method = Literal["boxed", "phrase", "last_line"]

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_BOX = re.compile(r"\\(?:boxed|fbox)")
_BRACE = re.compile(r"\\[{}]|[{}]")
# the brace-less "\boxed 5": a run up to a space, "$", ".", ",", a brace, a closing "\)" or "\]", or the next
# box, so that "\(\boxed 5\)" reads 5 (not "5\)") and "\boxed 41\boxed 42" reads both answers
_BARE_TOKEN = re.compile(r"(?:[^\s$.,{}\\]|\\(?!boxed|fbox|[)\]]))+")
_LINE_MAX = 1000  # of a phrase's or a last line's text: longer is prose, and bounds the regex work
# lookahead: phrases on one line ("the answer is 41. No, the answer is 42") are each found
_PHRASE = re.compile(
    rf"(?:final\s+answer|the\s+answer|answer)\s*(?:is|:|=)\s*:?\s*(?=(?P<ans>[^\n]{{1,{_LINE_MAX}}}))",
    re.IGNORECASE,
)
_MAX_PHRASES = 16
_INLINE_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?")
_LAST_LINE_MAX = 40  # a final line longer than this is prose, not an answer
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"

# NFKC would turn x² into x2 (read as 2x) and 3½ into 31/2: superscripts and subscripts become ^{..} and
# _{..}, and a vulgar fraction becomes \\frac{a}{b}, before NFKC folds the rest (full-width forms, ...).
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni", strict=True))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎", "0123456789+-=()", strict=True))
_SCRIPT_RUN = re.compile(f"[{''.join(_SUPERSCRIPTS)}]+|[{''.join(_SUBSCRIPTS)}]+")
_VULGAR = re.compile("[\u00bc-\u00be\u2150-\u215e\u2189]")
_AFTER_NFKC = str.maketrans({"\u2044": "/", "\u2215": "/", "\u2212": "-"})
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff]")


@dataclass(frozen=True)
class Extraction:
    text: str  # the final answer, stripped of delimiters, ready to be parsed as LaTeX
    method: Method
    answers: tuple[str, ...] = ()  # every answer the method found, in order; the last is `text`


def normalize_unicode(text: str) -> str:
    """`text` with Unicode forms folded (NFKC) after superscripts, subscripts and vulgar fractions are
    rewritten as LaTeX; fraction and division slashes and the minus sign become ASCII, and zero-width
    characters go."""
    if text.isascii():
        return text

    def script(match: re.Match[str]) -> str:
        run = match.group()
        if run[0] in _SUPERSCRIPTS:
            return "^{" + "".join(_SUPERSCRIPTS[c] for c in run) + "}"
        return "_{" + "".join(_SUBSCRIPTS[c] for c in run) + "}"

    def vulgar(match: re.Match[str]) -> str:
        num, _, den = unicodedata.normalize("NFKC", match.group()).partition("\u2044")
        return f"\\frac{{{num}}}{{{den}}}" if num and den else match.group()

    text = _VULGAR.sub(vulgar, _SCRIPT_RUN.sub(script, _INVISIBLE.sub("", text)))
    return unicodedata.normalize("NFKC", text).translate(_AFTER_NFKC)


def final_section(response: str) -> str:
    """The part after the last ``</think>``: the reasoning before it is not the answer."""
    return response.rsplit(_THINK_CLOSE, 1)[-1]


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each ``{`` that is closed -> index of its ``}``, in one pass (escaped ``\\{`` and
    ``\\}`` do not nest), so that a response full of unclosed boxes still costs linear time."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for match in _BRACE.finditer(text):
        token = match.group()
        if token == "{":
            stack.append(match.start())
        elif token == "}" and stack:
            pairs[stack.pop()] = match.start()
    return pairs


def boxed_answers(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` / ``\\fbox{...}`` with balanced braces, in order; unclosed and
    empty boxes are skipped, and a box around another box counts as the inner one. Also accepts the
    brace-less ``\\boxed 5`` form."""
    if not any(cmd in text for cmd in _BOX_COMMANDS):
        return []
    pairs: dict[int, int] | None = None
    boxes: list[tuple[int, int, str]] = []  # (start, end, content)
    for match in _BOX.finditer(text):
        i = match.end()
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            pairs = _brace_pairs(text) if pairs is None else pairs
            close = pairs.get(i)
            if close is not None and text[i + 1 : close].strip():
                boxes.append((match.start(), close, text[i + 1 : close].strip()))
        elif i < len(text) and i > match.end():  # "\boxed 5": a single token follows
            token = _BARE_TOKEN.match(text, i)
            if token:
                boxes.append((match.start(), token.end() - 1, token.group()))  # end inclusive, as `close`
    # boxes nest or are disjoint, and come sorted by start: one holds another iff the next starts inside it
    return [
        content for k, (_, end, content) in enumerate(boxes) if k + 1 == len(boxes) or boxes[k + 1][0] > end
    ]


def last_boxed(text: str) -> str | None:
    """Content of a response's last complete ``\\boxed{...}`` / ``\\fbox{...}`` (see `boxed_answers`: an
    unfinished box at the end leaves the one before it); None if there is none. Curation reads a reference
    strictly instead (flows/curate/answers.py:reference_box: a broken last box is no answer)."""
    boxes = boxed_answers(text)
    return boxes[-1] if boxes else None


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


def _phrase_answer(raw: str) -> str | None:
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


def phrase_answers(text: str) -> list[str]:
    """The answer of every "the answer is ..." phrase, in order; of more than `_MAX_PHRASES` phrases
    (hedging already), only the first ones and the last are read, which bounds the work."""
    matches = list(_PHRASE.finditer(text))
    if len(matches) > _MAX_PHRASES:
        matches = [*matches[: _MAX_PHRASES - 1], matches[-1]]
    found = (_phrase_answer(m.group("ans")) for m in matches)
    return [a for a in found if a]


def _from_last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[-1][-_LINE_MAX:]
    maths = _INLINE_MATH.findall(line)
    if maths:
        return next(g for g in maths[-1] if g).strip()
    stripped = _strip_delimiters(line)
    if len(stripped) <= _LAST_LINE_MAX and not re.search(r"[A-Za-z]{4,}\s+[A-Za-z]{2,}", stripped):
        return stripped or None  # short and not prose: an answer on its own line
    numbers = _NUMBER.findall(line)
    return numbers[-1].rstrip(",") if numbers else None


def extract_answer(response: str, *, last_line: bool = False) -> Extraction | None:
    """The model's final answer with every candidate of the same kind, or None when the response has
    none: boxes, else "the answer is" phrases, else (only with `last_line`) a short final line."""
    if not isinstance(response, str) or not response.strip():
        return None
    text = final_section(response)
    for method, answers in (("boxed", boxed_answers(text)), ("phrase", phrase_answers(text))):
        if answers:
            return Extraction(answers[-1], method, tuple(answers))
    line = _from_last_line(text) if last_line else None
    return Extraction(line, "last_line", (line,)) if line else None


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
