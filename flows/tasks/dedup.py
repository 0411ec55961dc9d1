"""Deduplication of generated task items against the run's other datasets.

Generated items share their family's wording by construction: two number-wall puzzles differ only in
their numbers, yet their word 5-gram Jaccard is above any useful near-duplicate threshold (measured:
MinHash at 0.7 removes 39 of 40 distinct level-1 number_wall puzzles, and the same of
dyck_language_errors and math_path). MinHash therefore compares a generated item only with free text
of *other* domains (the curated math, a user's own data), where a high Jaccard does mean the same
problem; against items of its own domain, and among the generated items themselves, a duplicate is an
exact one (same text after normalisation: the same puzzle, the same problem).

Not a flow: a step both task-data flows run, kept beside them.
"""

from __future__ import annotations

import polars as pl

from flows.config import MinhashConfig
from flows.curate.dedup import separate_from
from flows.curate.result import StepResult, split_by_reason
from flows.store import StepCount


def separate_from_dataset(
    df: pl.DataFrame, reference: pl.DataFrame, name: str, domain: str, m: MinhashConfig
) -> StepResult:
    """Drop rows of `df` duplicating a row of the dataset `name`: exactly against every row, and as
    MinHash near-duplicates (word `m.shingle_size`-gram Jaccard >= `m.threshold`) against its rows of
    other domains than `domain`. Each removed row's reason names the item it duplicates."""
    exact = separate_from(df, reference, method="exact", reference_name=name)
    other = reference.filter(pl.col("domain") != domain) if "domain" in reference.columns else reference
    if other.height and exact.kept.height:
        near = separate_from(
            exact.kept,
            other,
            method="minhash",
            threshold=m.threshold,
            num_perm=m.num_perm,
            shingle_size=m.shingle_size,
            mode=m.mode,
            reference_name=name,
        )
    else:
        near = split_by_reason(exact.kept, pl.Series([None] * exact.kept.height, dtype=pl.String), "", "")
    removed = pl.concat([exact.removed, near.removed], how="vertical_relaxed")
    summary = f"duplicates of {name} items: exact, or MinHash Jaccard >= {m.threshold} against its non-{domain} items"
    return StepResult(near.kept, removed, StepCount(f"dedup-vs-{name}", df.height, near.kept.height, summary))
