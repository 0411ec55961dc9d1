"""What the task-data flows share around their steps: step bookkeeping, progress, the dataset write
with its quarantine, and the Prefect artifacts (rows per task and difficulty, rows in/out per step).

Not a flow: what both task-data flows do around their steps, kept beside them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.artifacts import artifact_key
from flows.curate.result import StepResult
from flows.progress import prefect_progress
from flows.runner import ROW, fingerprint
from flows.schema import ITEM_COLUMNS, QUARANTINE_REASON
from flows.store import DatasetStore, Manifest


def source_hash(package) -> str:
    """Hash of a package's Python source: part of a step's cache key, so that a changed generator
    reruns it (compiled files and caches do not count)."""
    root = Path(package.__file__).parent
    return hashlib.sha256("".join(fingerprint(f) for f in sorted(root.rglob("*.py"))).encode()).hexdigest()


class Steps:
    """The flow's step results in order, logged as they come, with a Prefect progress artifact."""

    def __init__(self, run: str, kind: str, total: int) -> None:
        self.kind, self.total = kind, total
        self.key = artifact_key(run, kind)  # artifacts of one run and flow, versioned across reruns
        self.results: list[StepResult] = []
        self.done = 0
        self.logger = get_run_logger()
        self.progress = prefect_progress(f"{kind}: steps done", key=f"{self.key}-progress")

    def record(self, res: StepResult) -> pl.DataFrame:
        self.results.append(res)
        c = res.count
        self.logger.info("%s: %d -> %d (%s)", c.step, c.rows_in, c.rows_out, c.reason)
        self._advance()
        return res.kept

    def skip(self, why: str) -> None:
        """A step that has nothing to do this run (said in the log)."""
        self.logger.info(why)
        self._advance()

    def _advance(self) -> None:
        self.done += 1
        self.progress(self.done, self.total)

    def removed(self) -> pl.DataFrame:
        """Every removed row with its reason and the step that removed it."""
        frames = [
            r.removed.select(*ITEM_COLUMNS, QUARANTINE_REASON).with_columns(
                pl.lit(r.count.step).alias("step")
            )
            for r in self.results
        ]
        return pl.concat(frames, how="vertical_relaxed")


def write(store: DatasetStore, name: str, kept: pl.DataFrame, steps: Steps, **kwargs: Any) -> Manifest:
    """The dataset's new version: kept rows, quarantine with reasons, rows in/out per step."""
    return store.write(
        name,
        kept.drop(ROW, strict=False),
        steps=[r.count for r in steps.results],
        quarantine=steps.removed(),
        **kwargs,
    )


def composition(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows per task and difficulty (the metadata's `difficulty`), sorted."""
    difficulty = df["metadata"].map_elements(
        lambda m: json.loads(m).get("difficulty"), return_dtype=pl.Int64, skip_nulls=False
    )
    counts = (
        df.select("task", difficulty.alias("difficulty"))
        .group_by("task", "difficulty")
        .len("rows")
        .sort("task", "difficulty")
    )
    return counts.to_dicts()


def publish(manifest: Manifest, kept: pl.DataFrame, steps: Steps, notes: list[str]) -> dict:
    """Table artifacts (mixture, steps) and a markdown report; returns the flow's result dict."""
    mix = composition(kept) if kept.height else []
    step_rows = [
        {"step": c.step, "rows in": c.rows_in, "rows out": c.rows_out, "removed": c.removed, "why": c.reason}
        for c in (r.count for r in steps.results)
    ]
    create_table_artifact(
        mix, key=f"{steps.key}-mixture", description=f"{manifest.ref}: rows per task and difficulty"
    )
    create_table_artifact(
        step_rows, key=f"{steps.key}-steps", description=f"{manifest.ref}: rows in/out per step"
    )
    # A section of the run report (`m1 run` appends it) and the flow's markdown artifact.
    lines = [
        f"## {steps.kind}: {manifest.ref}, {manifest.rows} items, {manifest.quarantined} quarantined",
        "",
    ]
    lines += [f"- {note}" for note in notes]
    lines += ["", "| task | difficulty | rows |", "|---|---:|---:|"]
    lines += [f"| {r['task']} | {r['difficulty']} | {r['rows']} |" for r in mix]
    section = "\n".join(lines)
    create_markdown_artifact(
        section, key=f"{steps.key}-report", description=f"{steps.kind} of {manifest.ref}"
    )
    steps.progress(steps.total, steps.total)  # the dataset is written: done
    return {"manifest": json.loads(manifest.to_json()), "mixture": mix, "notes": notes, "report": section}
