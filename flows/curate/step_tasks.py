"""Every data step as a Prefect task: the one place that wraps a `Step` (flows/curate/step.py).

The task is named after the step (the name users see in the Prefect UI and find in a flow's
`tasks` states), described by what the step removes, cached on the content of its inputs, the step's
settings (its dataclass fields) and the source of this wrapper and of the step's class, with results
persisted under M1_HOME/cache (flows/runner.py: CACHED), and retried on a transient failure when the step
calls an endpoint or the Docker engine (`retry`: RETRY). A rerun with the same inputs resumes from cache.

Row-wise steps run over shards and merge back into input order (`mapped`; a step that makes rows,
over chunks of its plan: `over`), a step over the whole set runs once (`once`), a map-reduce step maps its expensive half over shards and reduces once (`map_reduce`).
This lives in flows/curate because curation owns StepResult; flows/runner.py cannot import it (runner is
what flows/curate imports: a cycle).
"""

from __future__ import annotations

import hashlib
import inspect

import polars as pl
from prefect import Task, task

from flows.curate.result import StepResult, merge_results
from flows.curate.step import MapReduceStep, Step
from flows.runner import CACHED, RETRY, ROW, Tasks, shards


def _run(rows, step: Step):
    return step.run(rows)


def _reduce(rows: pl.DataFrame, parts: list, step: MapReduceStep) -> StepResult:
    return step.reduce(rows, parts)


def _wrap(fn, step, name: str) -> Task:
    t = task(fn, name=name, description=step.removes, **CACHED, **(RETRY if step.retry else {}))
    # Prefect keys TASK_SOURCE on `source_code` (kept through pickling to Dask workers) and names the
    # task's runs by `task_key`: both are the step's, not only this module's shared function.
    t.source_code = inspect.getsource(fn) + inspect.getsource(type(step))  # a changed step misses the cache
    t.task_key = f"{name}-{hashlib.sha256(t.source_code.encode()).hexdigest()[:10]}"
    return t


def as_task(step: Step) -> Task:
    """The step as a Prefect task taking (rows, step)."""
    return _wrap(_run, step, step.name)


def over(tasks: Tasks, step: Step, batches: list) -> StepResult:
    """Run a step over batches (shards of a frame, chunks of a plan) and merge the results back into
    input order (the hidden `_row` column)."""
    return merge_results(tasks.map(as_task(step), batches, step), order_by=ROW)


def mapped(tasks: Tasks, step: Step, df: pl.DataFrame, n: int, by: pl.Expr | None = None) -> StepResult:
    """Run a row-wise step over `n` shards (row ranges, or hash partitions of `by`: equal keys meet in
    one shard), merged back into input order."""
    return over(tasks, step, shards(df, n, by))


def once(tasks: Tasks, step: Step, rows) -> StepResult:
    """Run a step once over all its rows."""
    return tasks.one(as_task(step), rows, step)


def inline(tasks: Tasks, step: Step, rows) -> StepResult:
    """Run a step once over all its rows in this process (cached like the others): for a step that
    drives the task runner's cluster itself."""
    state = as_task(step)(rows, step, return_state=True)
    tasks.states.append((step.name, state.name))
    return state.result()


def map_reduce(tasks: Tasks, step: MapReduceStep, df: pl.DataFrame, n: int) -> StepResult:
    """The step's `mapper` over `n` row-range shards, then its `reduce` once over the whole set."""
    parts = tasks.map(as_task(step.mapper), shards(df, n), step.mapper)
    return tasks.one(_wrap(_reduce, step, step.name), df, parts, step)
