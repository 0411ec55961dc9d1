"""What every preset shares (flows/curate/presets/): the `Preset` record, a row read into canonical
fields (`Converted`), the error of a row a preset cannot read (`RowError`), and the readers of a row's
values that raise it.

Not a flow: part of curation's ingest presets (flows/curate/presets/__init__.py says why they live here).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flows.curate.answers import reference_box


class RowError(Exception):
    """A row the preset cannot read: `field` names the column, the message says what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass
class Converted:
    """One row as canonical fields (None: the ingest's default) plus, when the row must be
    quarantined, the reason."""

    prompt: str | None
    reference: str | None = None
    id: str | None = None
    task: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None


@dataclass(frozen=True)
class Preset:
    name: str
    domain: str
    schemas: tuple[frozenset[str], ...]  # column sets detected as this preset
    uses: dict[str, tuple[str, ...]]  # canonical column (or metadata.<key>) -> the file's columns it is
    # read from, the first present one first (the record of how a source was read)
    consumes: frozenset[str]  # columns turned into canonical fields (not copied into metadata as they are)
    read: Callable[[Mapping[str, Any]], Converted]

    def matches(self, columns) -> bool:
        return frozenset(columns) in self.schemas

    def mapping(self, columns) -> dict[str, str]:
        """Canonical column -> the file's column it is read from (tests: columns), for those it has."""
        out = {}
        for col, sources in self.uses.items():
            if present := [s for s in sources if s in columns]:
                out[col] = " + ".join(present) if col == "metadata.tests" else present[0]
        return out


# -- reading values ----------------------------------------------------------------------------------


def read_text(row: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    """A text column's value; None (or "") when absent and not `required`."""
    value = row.get(name)
    if value is None:
        if required:
            raise RowError(name, "missing")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowError(name, f"expected text, got {kind_of(value)}")
    return str(value)


def read_json(row: Mapping[str, Any], name: str) -> Any:
    """A column that holds a structure, stored as such or as JSON text (the hub's copies do both)."""
    value = row.get(name)
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowError(name, f"not JSON ({exc.msg} at column {exc.pos + 1})") from None
    return value


def read_str_list(row: Mapping[str, Any], name: str, *, required: bool = True) -> list[str]:
    value = read_json(row, name)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RowError(name, f"expected a list of strings (or its JSON), got {kind_of(value)}")
    return value


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def fenced(code: str, language: str = "python") -> str:
    """A reference solution as the project's code items hold it: one fenced block."""
    return f"```{language}\n{code.rstrip()}\n```"


def boxed_answer(solution: str, column: str) -> tuple[str | None, str | None]:
    """(answer, quarantine reason) from the last \\boxed{} of a worked solution. This is the
    curation's reading of references (flows/curate/answers.py): an unbalanced last box is a broken
    reference, never an earlier box."""
    answer = reference_box(solution)
    if answer is not None:
        return answer, None
    if "\\boxed" in solution or "\\fbox" in solution:
        return None, f"unbalanced \\boxed{{ in {column}"
    return None, f"no \\boxed{{}} answer in {column}"


def numeric_id(preset: str, value: Any) -> str | None:
    """Ids that are bare numbers get the preset's name (mbpp/11), as the harnesses name them, so two
    such sources in one run do not clash."""
    if value is None:
        return None
    text = str(value)
    return f"{preset}/{text}" if text.isdigit() else text


CODE_ANSWER = "Answer with the complete program in a ```python code block."


def columns(text: str) -> frozenset[str]:
    return frozenset(text.split())
