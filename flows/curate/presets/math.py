"""The math presets: GSM8K, Hendrycks MATH and look-alikes, NuminaMath (the table in
flows/curate/presets/__init__.py says what each reads).

Not a flow: part of curation's ingest presets (flows/curate/presets/__init__.py says why they live here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flows.curate.presets.base import (
    Converted,
    Preset,
    RowError,
    boxed_answer,
    columns,
    kind_of,
    read_json,
    read_text,
)

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_LEVEL = re.compile(r"^\s*(?:level\s*)?(\d+)\s*$", re.IGNORECASE)


def _gsm8k(row: Mapping[str, Any]) -> Converted:
    question = read_text(row, "question")
    answer = read_text(row, "answer")
    final = answer.rsplit("####", 1)[1].strip() if "####" in answer else ""
    if not final:
        raise RowError("answer", "no final '#### <answer>' line (GSM8K's form)")
    reference = _THOUSANDS.sub("", final)
    return Converted(question, reference, metadata={"solution": answer})


def _difficulty(level: Any) -> int | None:
    """MATH's "Level 3" (or 3) -> 3; "Level ?" (a few MATH rows) -> None."""
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    match = _LEVEL.match(level) if isinstance(level, str) else None
    return int(match.group(1)) if match else None


def _math(row: Mapping[str, Any]) -> Converted:
    problem = read_text(row, "problem")
    solution = read_text(row, "solution", required=False)
    given = read_text(row, "answer", required=False)
    meta: dict[str, Any] = {"solution": solution} if solution is not None else {}
    level = row.get("level")
    if level is not None:
        meta["level"] = level
        if (difficulty := _difficulty(level)) is not None:
            meta["difficulty"] = difficulty
    reference, reason = (given.strip(), None) if given and given.strip() else (None, None)
    if reference is None:
        reference, reason = boxed_answer(solution, "solution") if solution else (None, "no solution")
    task = read_text(row, "type", required=False) or read_text(row, "subject", required=False)
    item_id = read_text(row, "unique_id", required=False)
    return Converted(problem, reference, id=item_id, task=task, metadata=meta, reason=reason)


_NUMINA_NO_ANSWER = {"proof": "a proof (no answer to check)", "notfound": "answer not found (NuminaMath)"}


def _numina(row: Mapping[str, Any]) -> Converted:
    problem = read_text(row, "problem")
    solution = read_text(row, "solution", required=False) or ""
    given = (read_text(row, "answer", required=False) or "").strip()
    messages = read_json(row, "messages")
    if messages is not None and not isinstance(messages, list):
        raise RowError("messages", f"expected a list of messages, got {kind_of(messages)}")
    meta: dict[str, Any] = {"solution": solution}
    if messages is not None:
        meta["messages"] = messages
    if given.lower() in _NUMINA_NO_ANSWER:
        return Converted(problem, None, metadata=meta, reason=_NUMINA_NO_ANSWER[given.lower()])
    reference, reason = (given, None) if given else boxed_answer(solution, "solution")
    return Converted(
        problem, reference, task=read_text(row, "source", required=False), metadata=meta, reason=reason
    )


# name, domain, schemas detected (exact column sets), how canonical columns are read (for the record),
# the columns consumed (not copied into metadata as they are), the reader
MATH_PRESETS: tuple[Preset, ...] = (
    Preset(
        "gsm8k",
        "math",
        (columns("question answer"),),
        {"prompt": ("question",), "reference": ("answer",), "metadata.solution": ("answer",)},
        columns("question answer"),
        _gsm8k,
    ),
    Preset(
        "math",
        "math",
        (
            columns("problem level type solution"),
            columns("problem solution answer subject level unique_id"),
        ),
        {
            "id": ("unique_id",),
            "prompt": ("problem",),
            "reference": ("answer", "solution"),
            "task": ("type", "subject"),
            "metadata.difficulty": ("level",),
            "metadata.solution": ("solution",),
        },
        columns("problem solution answer type subject level unique_id"),
        _math,
    ),
    Preset(
        "numina",
        "math",
        (
            columns("source problem solution messages"),
            columns("problem solution answer problem_type question_type source synthetic"),
        ),
        {
            "prompt": ("problem",),
            "reference": ("answer", "solution"),
            "task": ("source",),
            "metadata.solution": ("solution",),
        },
        columns("problem solution answer source messages"),
        _numina,
    ),
)
