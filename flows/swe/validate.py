"""Validation: a task is kept only if its FAIL_TO_PASS tests fail before the gold patch and all its
tests pass after it, both in its own instance image.

Two runs per task in the task's instance container: the tests as the task's commit has them (every
FAIL_TO_PASS must fail, every PASS_TO_PASS pass, by swebench's `test_failed`/`test_maintained`), then
the gold patch through the repair reward itself (reward 1: applied, and SWE-bench's grading resolves
it). A dropped task carries the first reason it failed; nothing is dropped silently.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from flows.swe.synthesize import restore_commit
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
    from swebench.harness.grading import test_failed, test_maintained

    from sandboxes.swe_run import files_of

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
