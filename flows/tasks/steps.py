"""The steps both task-data flows share, as `Step`s (flows/curate/step.py) or the helpers their steps
call: schema validation, the answer check, exact dedup among the items.

Not a flow: steps both task-data flows run, kept beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from flows.config import PipelineConfig
from flows.curate.result import StepResult, split_by_reason
from flows.curate.step_tasks import mapped
from flows.curate.steps import ExactDedup
from flows.curate.text import normalized
from flows.curriculum.prompts import answer_text
from flows.runner import Tasks
from flows.schema import validate_items
from flows.store import StepCount
from flows.tasks.publish import Steps
from verifiers.base import verify_safely


def chunks(specs: list, n: int) -> list[list]:
    """At most n contiguous chunks of a plan, for the generate step's map."""
    size = -(-len(specs) // max(1, min(n, len(specs))))
    return [specs[i : i + size] for i in range(0, len(specs), size)]


@dataclass(frozen=True)
class Schema:
    name = "schema"
    removes = "rows that do not fit the canonical item schema"
    retry = False
    where: str  # the rows' description in a reason, e.g. "code items"

    def run(self, rows: pl.DataFrame) -> StepResult:
        kept, bad = validate_items(rows, where=self.where)
        return StepResult(kept, bad, StepCount("schema", rows.height, kept.height, "canonical item schema"))


def answer_check(shard: pl.DataFrame, verifier, step: str, summary: str) -> StepResult:
    """Keep the items whose reference, rendered as the SFT warm start's target, scores 1 with the
    domain's verifier: anything else is a generator bug, and would teach a wrong answer."""
    rewards = verify_safely(verifier, [{**r, "response": answer_text(r)} for r in shard.to_dicts()])
    reason = pl.Series(
        [
            None
            if r.reward >= 1.0
            else f"reference scores {r.reward:g} with the {verifier.name} verifier: "
            f"{r.details.get('error') or r.details.get('verdict') or r.details}"
            for r in rewards
        ],
        dtype=pl.String,
    )
    return split_by_reason(shard, reason, step, summary)


def deduplicate(tasks: Tasks, steps: Steps, config: PipelineConfig, df: pl.DataFrame) -> pl.DataFrame:
    """Exact dedup among the items (same text after normalisation: the same puzzle, the same problem).
    Duplicates of the run's other datasets are removed where the curriculum reads them together
    (flows/curriculum/overlap.py), so that no producer's output depends on which ran first."""
    return steps.record(
        mapped(tasks, ExactDedup(), df, config.runner.shards, by=normalized(pl.col("prompt")))
    )
