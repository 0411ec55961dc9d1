"""The data-step protocol, as datatrove's `PipelineStep` has it: a step has a name, says what it removes,
and runs one way, returning a `StepResult` (rows kept, rows removed each with its reason, counts).

Curation (flows/curate/steps.py), the task-data flows (flows/tasks) and the SWE flow's validation
(flows/swe/validate.py) write their steps this way; flows/curate/step_tasks.py turns any step into a
Prefect task, the one place that does so. What only reads or makes the rows a flow starts from (curation's
ingest, SWE repositories and synthesis) stays a task of its flow.
A step's settings are its dataclass fields: they are part of its task's cache key, with the step's source.

A new step is a few lines::

    @dataclass(frozen=True)
    class ShortPrompts:
        name = "short-prompts"
        removes = "prompts under min_words words"
        min_words: int = 3

        def run(self, rows: pl.DataFrame) -> StepResult:
            short = rows["prompt"].str.split(" ").list.len() < self.min_words
            why = pl.when(short).then(pl.lit(f"under {self.min_words} words")).otherwise(None)
            return split_by_reason(rows, rows.select(why).to_series(), self.name, self.removes)

and runs as ``mapped(tasks, ShortPrompts(), df, n)`` in a flow.

Not a flow: the protocol of the flows' data steps; flows/curate/step_tasks.py runs them as Prefect tasks.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

import polars as pl

from flows.curate.result import StepResult


@runtime_checkable
class Step(Protocol):
    """One data step. `run` takes a batch of rows (a shard of a frame; for a step that makes rows, a
    chunk of its plan) and returns what it kept and removed, with its counts.

    `retry` says the step calls a network endpoint or the Docker engine, whose transient failures are
    worth retrying (flows/runner.py: RETRY); a deterministic step fails at once.
    """

    name: ClassVar[str]  # the Prefect task's name
    removes: ClassVar[str]  # what it removes, in words (the task's description in the Prefect UI)
    retry: ClassVar[bool]

    def run(self, rows: Any) -> StepResult: ...


@runtime_checkable
class MapReduceStep(Protocol):
    """A step whose expensive half runs per shard (`mapper`: MinHash sketches, embeddings) and whose cheap
    half runs once over the whole set (`reduce`: banding, neighbour search, clustering), so that "the
    first row of a cluster wins" means the same for any number of shards.

    `mapper` is a step of its own (its `run` returns a part, not a StepResult) holding only the settings
    the map half reads: the map tasks' cache then survives a change of a reduce-only setting (a dedup
    threshold), and a threshold sweep recomputes no embeddings.
    """

    name: ClassVar[str]  # the reduce task's name
    removes: ClassVar[str]
    retry: ClassVar[bool]

    @property
    def mapper(self) -> Step: ...

    def reduce(self, rows: pl.DataFrame, parts: list) -> StepResult: ...
