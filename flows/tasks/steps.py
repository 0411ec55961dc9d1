"""The steps both task-data flows share, as cached Prefect tasks or the helpers their tasks call:
schema validation, the answer check, exact dedup among the items, dedup against the run's datasets."""

from __future__ import annotations

import polars as pl
from prefect import task

from flows.config import MinhashConfig, PipelineConfig
from flows.curate.flow import exact_task, mapped
from flows.curate.result import StepResult, split_by_reason
from flows.curate.text import normalized
from flows.datasets import dataset_name
from flows.runner import CACHED, Tasks
from flows.store import DatasetStore, StepCount
from flows.tasks.publish import Steps


def chunks(specs: list, n: int) -> list[list]:
    """At most n contiguous chunks of a plan, for the generate step's map."""
    size = -(-len(specs) // max(1, min(n, len(specs))))
    return [specs[i : i + size] for i in range(0, len(specs), size)]


@task(name="schema", **CACHED)
def schema_task(df: pl.DataFrame, where: str) -> StepResult:
    from flows.schema import validate_items

    kept, bad = validate_items(df, where=where)
    return StepResult(kept, bad, StepCount("schema", df.height, kept.height, "canonical item schema"))


def answer_check(shard: pl.DataFrame, verifier, step: str, summary: str) -> StepResult:
    """Keep the items whose reference, rendered as the SFT warm start's target, scores 1 with the
    domain's verifier: anything else is a generator bug, and would teach a wrong answer."""
    from flows.curriculum.prompts import answer_text
    from verifiers.base import verify_safely

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


@task(name="dedup-vs-dataset", **CACHED)
def separate_task(
    shard: pl.DataFrame, reference: pl.DataFrame, name: str, domain: str, m: MinhashConfig
) -> StepResult:
    from flows.tasks.dedup import separate_from_dataset

    return separate_from_dataset(shard, reference, name, domain, m)


def deduplicate(
    tasks: Tasks,
    steps: Steps,
    config: PipelineConfig,
    df: pl.DataFrame,
    domain: str,
    against: tuple[str, ...],
) -> tuple[pl.DataFrame, list[str]]:
    """Exact dedup among the items, then against each of the run's datasets of the kinds `against`
    that the store holds; returns the kept items and the versions compared against (the parents)."""
    n, store = config.runner.shards, DatasetStore(config.home)
    df = steps.record(mapped(tasks, exact_task, df, n, by=normalized(pl.col("prompt"))))
    parents = []
    for kind in against:
        name = dataset_name(config.name, kind)
        if name not in store.names():
            steps.skip(f"{name} is not in the store: nothing to deduplicate against")
            continue
        parents.append(store.manifest(name).ref)
        m = config.curate.minhash
        df = steps.record(mapped(tasks, separate_task, df, n, store.read(name), name, domain, m))
    return df, parents
