"""What every curation step returns: the rows it kept, the rows it removed and why, plus its evidence.

Not a flow: what every data step of the flows returns (curation, task data, SWE validation).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from flows.schema import QUARANTINE_REASON
from flows.store import StepCount


@dataclass
class StepResult:
    """One step's outcome.

    `removed` holds the removed rows with every input column plus `reason` (why this row left).
    The optional frames are the step's evidence: `clusters` (dedup: every input id with its cluster's
    kept id), `matches` (contamination: which benchmark item each removed row matched), `rates`
    (pass-rate filtering: every item's pass rate).
    """

    kept: pl.DataFrame
    removed: pl.DataFrame
    count: StepCount
    clusters: pl.DataFrame | None = None
    matches: pl.DataFrame | None = None
    rates: pl.DataFrame | None = None


def split_by_reason(df: pl.DataFrame, reason: pl.Series, step: str, summary: str, **evidence) -> StepResult:
    """Build a StepResult from a per-row reason (null = keep). Keeps the input order in both frames."""
    tagged = df.with_columns(reason.alias(QUARANTINE_REASON))
    drop = tagged[QUARANTINE_REASON].is_not_null()
    kept = tagged.filter(~drop).drop(QUARANTINE_REASON)
    removed = tagged.filter(drop)
    return StepResult(kept, removed, StepCount(step, df.height, kept.height, summary), **evidence)


def merge_results(parts: list[StepResult], order_by: str | None = None) -> StepResult:
    """One StepResult from the same step run over shards (counts summed, frames concatenated)."""

    def cat(frames: list[pl.DataFrame | None]) -> pl.DataFrame | None:
        frames = [f for f in frames if f is not None]
        if not frames:
            return None
        out = pl.concat(frames, how="vertical_relaxed")
        return out.sort(order_by) if order_by and order_by in out.columns else out

    first = parts[0].count
    count = StepCount(
        first.step, sum(p.count.rows_in for p in parts), sum(p.count.rows_out for p in parts), first.reason
    )
    return StepResult(
        cat([p.kept for p in parts]),
        cat([p.removed for p in parts]),
        count,
        clusters=cat([p.clusters for p in parts]),
        matches=cat([p.matches for p in parts]),
        rates=cat([p.rates for p in parts]),
    )
