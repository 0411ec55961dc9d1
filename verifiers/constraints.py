"""Instruction-following verifier: rule checks for constraints given in the item as structured data.

An item carries ``constraints``: a list of ``{"type": ..., <parameters>}`` (at the top level or inside
its ``metadata`` JSON). Every check is a small pure function of the response (after any ``</think>``)
in the spirit of IFEval's verifiable instructions. Reward = the fraction of constraints satisfied, or
1/0 for all-satisfied (``mode="all"``); details list every constraint with its verdict and why.

Types (parameters): word_count / sentence_count / paragraph_count / char_count (min, max),
keywords (words, min_count=1), forbidden_words (words), keyword_frequency (word, min, max),
json_format (), markdown (headings, bullets, numbered, bold, code_blocks, tables: minimum counts),
language (lang, an ISO 639-1 code), case (mode: lower | upper | title), starts_with / ends_with (text),
no_commas (), placeholders (min: count of [square-bracket] fields).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from verifiers.base import ItemError, Reward, item_field
from verifiers.format import final_section

Check = Callable[[str, Mapping[str, Any]], tuple[bool, str]]

_WORD = re.compile(r"\b[\w'-]+\b", re.UNICODE)
# A sentence ends at ., ! or ? followed by space/end, but not in abbreviations like "e.g." or decimals
# (one mark right after a letter or digit; a run of two or more always ends one). Matches start only at
# the start of a run and never backtrack into it, so "!!!...x" costs linear time, not quadratic.
_SENTENCE_END = re.compile(r"(?<![.!?])(?:(?<!\b[A-Za-z])(?<!\d)[.!?]|[.!?]{2})[.!?]*+(?=\s|$)")
_FENCE = re.compile(r"^```[\w+-]*\s*\n(.*?)\n```\s*$", re.DOTALL)


class ConstraintSpecError(ItemError):
    """The item's constraint list is malformed (unknown type, missing parameter)."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _bounded(value: int, spec: Mapping[str, Any], unit: str) -> tuple[bool, str]:
    low, high = spec.get("min"), spec.get("max")
    if low is None and high is None:
        raise ConstraintSpecError("needs `min` and/or `max`")
    ok = (low is None or value >= int(low)) and (high is None or value <= int(high))
    bounds = " and ".join(
        s for s in (f">= {low}" if low is not None else "", f"<= {high}" if high is not None else "") if s
    )
    return ok, f"{value} {unit} (required {bounds})"


def _param(spec: Mapping[str, Any], key: str) -> Any:
    if key not in spec:
        raise ConstraintSpecError(f"missing parameter `{key}`")
    return spec[key]


def _word_list(spec: Mapping[str, Any]) -> list[str]:
    words = _param(spec, "words")
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
        raise ConstraintSpecError("`words` must be a list of non-empty strings")
    return words


def _count_term(text: str, term: str) -> int:
    """Case-insensitive whole-word (or whole-phrase) occurrences."""
    return len(re.findall(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE))


def word_count(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    return _bounded(len(_words(text)), spec, "words")


def sentence_count(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    stripped = text.strip()
    n = len(_SENTENCE_END.findall(stripped))
    if stripped and stripped[-1] not in ".!?":
        n += 1  # a final sentence without punctuation still counts
    return _bounded(n, spec, "sentences")


def paragraph_count(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return _bounded(len(paragraphs), spec, "paragraphs")


def char_count(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    return _bounded(len(text.strip()), spec, "characters")


def keywords(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    need = int(spec.get("min_count", 1))
    missing = [w for w in _word_list(spec) if _count_term(text, w) < need]
    return not missing, f"missing: {', '.join(missing)}" if missing else "all present"


def forbidden_words(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    found = [w for w in _word_list(spec) if _count_term(text, w)]
    return not found, f"used: {', '.join(found)}" if found else "none used"


def keyword_frequency(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    word = _param(spec, "word")
    return _bounded(_count_term(text, str(word)), spec, f"x {word!r}")


def json_format(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:  # a single ```json fenced block is still "the whole response is JSON"
        body = fenced.group(1)
    try:
        json.loads(body)
    except json.JSONDecodeError as exc:
        return False, f"not valid JSON: {exc.msg} at line {exc.lineno}"
    except RecursionError:  # "[[[[..." a megabyte deep
        return False, "not valid JSON: nested too deeply"
    return True, "valid JSON"


_MARKDOWN = {
    "headings": re.compile(r"^#{1,6}\s+\S", re.MULTILINE),
    "bullets": re.compile(r"^\s*[-*+]\s+\S", re.MULTILINE),
    "numbered": re.compile(r"^\s*\d+[.)]\s+\S", re.MULTILINE),
    "bold": re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__"),
    "code_blocks": re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL),
}
_TABLE_RULE = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*")


def _count_tables(text: str) -> int:
    """Header rows (a line with ``|``) followed by a ``---|---`` rule; line by line, so that a hostile
    line full of pipes costs linear time, not a regex's quadratic backtracking."""
    lines = text.splitlines()
    return sum("|" in lines[i] and bool(_TABLE_RULE.fullmatch(lines[i + 1])) for i in range(len(lines) - 1))


def markdown(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    wanted = {k: int(v) for k, v in spec.items() if k != "type"}
    kinds = [*_MARKDOWN, "tables"]
    if set(wanted) - set(kinds) or not wanted:
        raise ConstraintSpecError(f"markdown takes minimum counts of {', '.join(kinds)}")
    counts = {k: _count_tables(text) if k == "tables" else len(_MARKDOWN[k].findall(text)) for k in wanted}
    short = [f"{k} {counts[k]} < {n}" for k, n in wanted.items() if counts[k] < n]
    return not short, "; ".join(short) if short else ", ".join(f"{k} {c}" for k, c in counts.items())


def language(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    from langdetect import DetectorFactory, LangDetectException, detect

    DetectorFactory.seed = 0  # langdetect samples n-grams at random; fix it for a stable verdict
    want = str(_param(spec, "lang")).lower()
    try:
        got = detect(text)
    except LangDetectException:
        return False, "no language detected (no letters?)"
    return got.split("-")[0] == want.split("-")[0], f"detected {got}, required {want}"


def case(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    mode = _param(spec, "mode")
    letters = [w for w in _words(text) if any(c.isalpha() for c in w)]
    if mode == "lower":
        bad = [w for w in letters if w != w.lower()]
    elif mode == "upper":
        bad = [w for w in letters if w != w.upper()]
    elif mode == "title":
        bad = [w for w in letters if not w[0].isupper()]
    else:
        raise ConstraintSpecError("case mode must be lower, upper or title")
    return not bad, f"{len(bad)} words not {mode} case" + (f" (e.g. {bad[0]!r})" if bad else "")


def starts_with(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    prefix = str(_param(spec, "text"))
    return text.strip().startswith(prefix), f"must start with {prefix!r}"


def ends_with(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    suffix = str(_param(spec, "text"))
    return text.strip().endswith(suffix), f"must end with {suffix!r}"


def no_commas(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    n = text.count(",")
    return n == 0, f"{n} commas"


def placeholders(text: str, spec: Mapping[str, Any]) -> tuple[bool, str]:
    return _bounded(len(re.findall(r"\[[^\[\]\n]+\]", text)), {"min": _param(spec, "min")}, "placeholders")


CHECKS: dict[str, Check] = {
    "word_count": word_count,
    "sentence_count": sentence_count,
    "paragraph_count": paragraph_count,
    "char_count": char_count,
    "keywords": keywords,
    "forbidden_words": forbidden_words,
    "keyword_frequency": keyword_frequency,
    "json_format": json_format,
    "markdown": markdown,
    "language": language,
    "case": case,
    "starts_with": starts_with,
    "ends_with": ends_with,
    "no_commas": no_commas,
    "placeholders": placeholders,
}


def constraints_of(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = item_field(item, "constraints")
    if not isinstance(found, list) or not found:
        raise ConstraintSpecError("item has no `constraints` list")
    if not all(isinstance(c, Mapping) and isinstance(c.get("type"), str) for c in found):
        raise ConstraintSpecError("each constraint must be an object with a `type`")
    return found


class ConstraintVerifier:
    """Reward = fraction of constraints satisfied (``mode="fraction"``) or all-or-nothing (``"all"``)."""

    name = "constraints"
    version = "1.0.0"

    def __init__(self, mode: Literal["fraction", "all"] = "fraction") -> None:
        if mode not in ("fraction", "all"):
            raise ValueError("mode must be 'fraction' or 'all'")
        self.mode = mode

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        return [self._one(item) for item in items]

    def _one(self, item: Mapping[str, Any]) -> Reward:
        response = item.get("response")
        if not isinstance(response, str):
            return Reward.error("item has no text `response`")
        try:
            specs = constraints_of(item)
            unknown = sorted({c["type"] for c in specs} - set(CHECKS))
            if unknown:
                raise ConstraintSpecError(f"unknown constraint type(s): {', '.join(unknown)}")
        except ItemError as exc:
            return Reward.error(str(exc))
        text = final_section(response)
        results = []
        for spec in specs:
            try:
                ok, why = CHECKS[spec["type"]](text, spec)
            except (ConstraintSpecError, TypeError, ValueError) as exc:
                return Reward.error(f"constraint {spec['type']}: {exc}")
            results.append({"type": spec["type"], "ok": ok, "why": why})
        passed = sum(r["ok"] for r in results)
        reward = passed / len(results) if self.mode == "fraction" else float(passed == len(results))
        return Reward(reward, {"passed": passed, "total": len(results), "constraints": results})
