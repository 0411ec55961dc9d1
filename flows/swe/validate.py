"""Validation: a task is kept only if its FAIL_TO_PASS tests fail before the gold patch and all its
tests pass after it, both in its own instance image.

Two runs per task in the task's instance container: the tests as the task's commit has them (every
FAIL_TO_PASS must fail, every PASS_TO_PASS pass, by swebench's `test_failed`/`test_maintained`), then
the gold patch through the repair reward itself (reward 1: applied, and SWE-bench's grading resolves
it). A dropped task carries the first reason it failed; nothing is dropped silently.

Not a flow: a step of the SWE flow (flows/swe/flow.py) and of `m1 swe validate`, kept beside it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from flows.config import SWEConfig
from flows.curate.result import StepResult, split_by_reason
from flows.runner import ROW
from flows.swe.synthesize import restore_commit
from sandboxes.swe_run import SWE_LIMITS, files_of
from verifiers.base import ItemError
from verifiers.swe import SWEScorer, SWETask, statuses


@dataclass
class Validation:
    instance_id: str
    kept: bool
    reason: str  # '' when kept
    seconds: float
    row: dict  # the task (with its instance image tag when it was built)


def _first(tests: Sequence[str]) -> str:
    return tests[0] + (f" (and {len(tests) - 1} more)" if len(tests) > 1 else "")


def validate_task(row: dict, scorer: SWEScorer) -> Validation:
    # lazy: optional extra [swe] (swebench)
    from swebench.harness.grading import test_failed, test_maintained

    start = time.monotonic()
    instance_id = str(row.get("instance_id", "?"))

    def drop(reason: str, task_row: dict = row) -> Validation:
        return Validation(instance_id, False, reason, time.monotonic() - start, task_row)

    try:
        task = SWETask.from_row(row)
        if not task.FAIL_TO_PASS:
            return drop("no FAIL_TO_PASS tests")
        repo_dir = Path(scorer.repos_dir) / task.repo
        if (repo_dir / ".git").exists() and task.extra.get("created_from"):
            restore_commit(repo_dir, task)
        task.image = scorer.image(task)
    except (ItemError, RuntimeError) as exc:
        return drop(str(exc))
    done = task.to_row()
    before = scorer.run(task, files_of(task.tests))
    if not before.completed:
        return drop(f"before the gold patch: {before.describe()}", done)
    found = statuses(before)
    passing = [t for t in task.FAIL_TO_PASS if not test_failed(t, found)]
    if passing:
        return drop(f"FAIL_TO_PASS passes before the gold patch: {_first(passing)}", done)
    broken = [t for t in task.PASS_TO_PASS if not test_maintained(t, found)]
    if broken:
        return drop(f"PASS_TO_PASS fails before the gold patch: {_first(broken)}", done)
    gold = scorer.repair(task, task.patch)
    if gold.reward != 1.0:
        why = gold.details.get("apply_error") or gold.details.get("reason", "not resolved")
        failed = gold.details.get("failed") or []
        return drop(f"with the gold patch: {why}" + (f": {_first(failed)}" if failed else ""), done)
    return Validation(instance_id, True, "", time.monotonic() - start, done)


def validate_tasks(
    rows: Sequence[dict],
    scorer: SWEScorer,
    workers: int = 2,
    on_done: Callable[[Validation], None] | None = None,
) -> list[Validation]:
    """Validate tasks `workers` at a time (each task uses one container at a time); input order kept."""

    def one(row: dict) -> Validation:
        result = validate_task(row, scorer)
        if on_done:
            on_done(result)
        return result

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return list(pool.map(one, rows))


def scorer(c: SWEConfig, repos: Path) -> SWEScorer:
    return SWEScorer(repos, replace(SWE_LIMITS, wall_s=c.wall_s, memory_mb=c.memory_mb))


# A task as the step's row: its SWE-bench fields as JSON (default=str, as the dataset writes them).
TASKS = {ROW: pl.Int64, "instance_id": pl.String, "task": pl.String}


def task_rows(rows: Sequence[dict]) -> pl.DataFrame:
    """Tasks as the validation step's rows (`_row`: their position, `task`: the SWE-bench row as JSON)."""
    return pl.DataFrame(
        [
            {ROW: i, "instance_id": str(r.get("instance_id", "?")), "task": json.dumps(r, default=str)}
            for i, r in enumerate(rows)
        ],
        schema=TASKS,
    )


@dataclass(frozen=True)
class Validate:
    """Validation as a data step (flows/curate/step.py): kept rows carry the task as validated (with its
    instance image), removed rows the first reason it failed; `seconds` each task took."""

    name = "swe-validate"
    removes = "tasks whose FAIL_TO_PASS tests do not fail before the gold patch, or not all pass after it"
    retry = True  # the Docker engine
    c: SWEConfig
    repos: str

    def run(self, rows: pl.DataFrame) -> StepResult:
        check = scorer(self.c, Path(self.repos))
        done = [validate_task(json.loads(t), check) for t in rows["task"]]
        out = rows.with_columns(
            pl.Series("task", [json.dumps(v.row, default=str) for v in done], dtype=pl.String),
            pl.Series("seconds", [v.seconds for v in done], dtype=pl.Float64),
        )
        reason = pl.Series([None if v.kept else v.reason for v in done], dtype=pl.String)
        return split_by_reason(out, reason, "validate", "F2P fail before, all pass after the gold patch")
