"""The guard against a step that empties a source, which is almost always a column read wrongly.

A source whose answer column is not recognised yields items without a reference; cleaning then removes
every one of them as "empty reference", and the run would end with `0 items` and exit 0, leaving
training to fail later with a message that does not name the cause. So each step's removals are
counted per source (the rows of a source keep their place in the run's global order, the `_row`
column), and a step that removes more than `curate.max_removed_share` of a source's rows (pass-rate
filtering aside: how much it keeps depends on the policy) fails the run with one line: the source, the
step, the most common reason and, where that reason is about a column, the column to map.

The share is per source, not per run: a second file read wrongly is as wrong beside a large good one.

Not a flow: a check the curation flow and `m1 curate ingest` run, kept beside the flow.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from flows.errors import InputError

# The canonical column a removal reason is about, found by the words the steps' reasons use.
_REASON_COLUMNS = (
    ("reference", re.compile(r"\b(?:reference|answer|boxed)\b")),
    ("prompt", re.compile(r"\bprompt\b")),
    ("domain", re.compile(r"\bdomain\b")),
    ("metadata.tests", re.compile(r"\btests\b")),
    ("id", re.compile(r"\bid\b")),
)


def reason_kind(reason: str) -> str:
    """A reason without the row's particulars: "duplicate of x-1" -> "duplicate", "answer 'blue' (boxed)
    is words ('blue'), not ..." -> "answer … is words, not ...", so that reasons can be counted."""
    text = re.sub(r"\s*\([^()]*\)", "", re.sub(r"^line \d+: ", "", reason))
    text = re.sub(r" (?:of|with) .*", "", text)
    return re.sub(r"'[^']*'", "…", text).strip()


@dataclass
class Span:
    """One source's rows in the run: rows lo..hi-1 of the global order, and how its columns were read."""

    label: str  # the file, or "the bundled generator"
    lo: int
    hi: int
    columns: list[str] = field(default_factory=list)  # the file's columns
    mapping: dict[str, str] = field(default_factory=dict)  # canonical -> file column, as read

    def mask(self, rows: pl.Series) -> pl.Series:
        """Which of the run's rows (their `_row` numbers) are this source's."""
        return (rows >= self.lo) & (rows < self.hi)


def problem(span: Span, step: str, rows_in: int, reasons: Sequence[str], max_share: float) -> str | None:
    """The one-line error when `step` removed more than `max_share` of the `rows_in` rows of a source
    (`reasons`: one per removed row), else None."""
    if not rows_in or len(reasons) / rows_in <= max_share:
        return None
    kind, count = Counter(reason_kind(r or "") for r in reasons).most_common(1)[0]
    head = f"{span.label}: {step} removed {len(reasons)} of {rows_in} rows ({kind}: {count})"
    column = next((c for c, words in _REASON_COLUMNS if words.search(kind)), None)
    if column is None or not span.columns:
        option = " (--max-removed-share with `m1 curate ingest`)" if step == "ingest" else ""
        return (
            f"{head}; if that is expected, raise curate.max_removed_share{option} "
            f"(now {max_share:g}; 1: never fail)"
        )
    used = span.mapping.get(column)
    free = [c for c in span.columns if c not in span.mapping.values()]
    key = f'"{column}"' if "." in column else column
    found = f"its {column} is read from {used!r}" if used else f"no {column} column was found"
    return (
        f'{head}: {found}; map the right column, e.g. mapping = {{ {key} = "COLUMN" }} under '
        f"[[curate.sources]] (--map {column}=COLUMN with `m1 curate ingest`); "
        f"unmapped columns: {', '.join(free) or 'none'}"
    )


def check(span: Span, step: str, rows_in: int, reasons: Sequence[str], max_share: float) -> None:
    if message := problem(span, step, rows_in, reasons, max_share):
        raise InputError(message)
