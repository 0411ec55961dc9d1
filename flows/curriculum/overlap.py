"""The curriculum's datasets deduplicated against each other, where they are read together.

Each producer writes its dataset alone (exact duplicates within it removed), so that no dataset depends on
which producer ran first or whether another has run at all. When a curriculum reads several datasets, an
item of a later one (in the curriculum's order: the user's curated data first) that duplicates an item
kept from an earlier one is left out of training and evaluation:

- exactly (the same text after normalisation) against every earlier item;
- as a MinHash near-duplicate (word `curate.minhash.shingle_size`-gram Jaccard >= its threshold) against
  earlier items of *other* domains only. Generated items share their family's wording by construction:
  two number-wall puzzles differ only in their numbers, yet their Jaccard is above any useful threshold
  (MinHash at 0.7 removes 39 of 40 distinct level-1 number_wall puzzles, and the same of
  dyck_language_errors and math_path). Against free text of another domain a high Jaccard does mean the
  same problem.

What is left out is a function of the dataset versions and `curate.minhash` alone, both inputs of every
thing that reads the curriculum's data (flows/lineage.py); each removed row carries the item it duplicates.

Not a flow: how the curriculum's data is assembled (flows/curriculum/mixture.py `load_data`).
"""

from __future__ import annotations

import polars as pl

from flows.config import MinhashConfig
from flows.curate.dedup import separate_from
from flows.curate.result import StepResult
from flows.schema import QUARANTINE_REASON
from flows.store import StepCount

_ORDER = "_overlap_row"


def separate_from_dataset(
    df: pl.DataFrame, reference: pl.DataFrame, name: str, m: MinhashConfig
) -> StepResult:
    """Rows of `df` that duplicate a row of the dataset `name` (``reference``) removed: exactly against
    every row, and as MinHash near-duplicates against its rows of other domains than the row's own. Each
    removed row's reason names the item it duplicates; kept rows stay in their order."""
    exact = separate_from(df, reference, method="exact", reference_name=name)
    kept, removed = [exact.kept.with_row_index(_ORDER)], [exact.removed]
    for domain in exact.kept["domain"].unique(maintain_order=True).to_list():
        other = reference.filter(pl.col("domain") != domain)
        if not other.height:
            continue
        rows = kept[0].filter(pl.col("domain") == domain)
        near = separate_from(
            rows,
            other,
            method="minhash",
            threshold=m.threshold,
            num_perm=m.num_perm,
            shingle_size=m.shingle_size,
            mode=m.mode,
            reference_name=name,
        )
        kept[0] = kept[0].filter(~pl.col(_ORDER).is_in(near.removed[_ORDER].implode()))
        removed.append(near.removed.drop(_ORDER))
    out = kept[0].drop(_ORDER)
    summary = f"duplicates of {name} items: exact, or MinHash Jaccard >= {m.threshold} against other domains"
    return StepResult(
        out,
        pl.concat(removed, how="vertical_relaxed"),
        StepCount(f"dedup-vs-{name}", df.height, out.height, summary),
    )


def separate_overlaps(
    frames: list[tuple[str, pl.DataFrame]], m: MinhashConfig
) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """Each dataset without the items that duplicate one kept from an earlier dataset, and every removed
    item with its dataset and reason (columns of the items plus ``dataset`` and ``reason``)."""
    kept: list[tuple[str, pl.DataFrame]] = []
    removed: list[pl.DataFrame] = []
    for name, df in frames:
        for earlier, reference in kept:
            if not (df.height and reference.height):
                continue
            res = separate_from_dataset(df, reference, earlier, m)
            if res.removed.height:
                removed.append(res.removed.with_columns(pl.lit(name).alias("dataset")))
            df = res.kept
        kept.append((name, df))
    columns = {**frames[0][1].schema, QUARANTINE_REASON: pl.String, "dataset": pl.String} if frames else {}
    out = pl.concat(removed, how="diagonal_relaxed") if removed else pl.DataFrame(schema=columns)
    return [df for _, df in kept], out
