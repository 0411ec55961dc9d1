"""The canonical RL item schema, declared once and validated at every stage boundary.

Bad rows are never dropped silently: `validate_items` splits a frame into the rows that conform and a
quarantine frame that carries every rejected row with a `reason` column.

Not a flow: the contract between the flows' stages, which only the flows write and read.
"""

from __future__ import annotations

import json

import polars as pl

from flows.errors import InputError

# The columns every RL item has. Stages add their own columns (answer, pass_rate, ...) beside these.
ITEM_COLUMNS: dict[str, pl.DataType] = {
    "id": pl.String(),
    "source": pl.String(),
    "domain": pl.String(),
    "task": pl.String(),
    "prompt": pl.String(),
    "reference": pl.String(),
    "metadata": pl.String(),  # a JSON object, kept as text so Parquet stays schema-stable
}
DOMAINS = ("math", "code", "logic", "swe", "general")
QUARANTINE_REASON = "reason"


def require_columns(df: pl.DataFrame, columns, *, where: str) -> None:
    """Raise a one-line InputError when whole columns are missing: a file-level problem, not a row's."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)} (has: {', '.join(df.columns)})")


def _is_json_object(text: str | None) -> bool:
    if text is None:
        return False
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, TypeError):
        return False


def validate_items(df: pl.DataFrame, *, where: str = "items") -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return (valid, quarantined). Missing columns are an error; bad rows go to quarantine with a reason.

    Row rules: non-empty unique id, non-empty prompt, known domain, metadata a JSON object.
    Duplicate ids keep their first occurrence.
    """
    require_columns(df, ITEM_COLUMNS, where=where)
    df = df.with_columns([pl.col(name).cast(dtype, strict=False) for name, dtype in ITEM_COLUMNS.items()])
    metadata_ok = df["metadata"].map_elements(_is_json_object, return_dtype=pl.Boolean, skip_nulls=False)
    reason = (
        pl.when(pl.col("id").is_null() | (pl.col("id").str.strip_chars() == ""))
        .then(pl.lit("empty id"))
        .when(pl.col("id").is_first_distinct().not_())
        .then(pl.lit("duplicate id"))
        .when(pl.col("prompt").is_null() | (pl.col("prompt").str.strip_chars() == ""))
        .then(pl.lit("empty prompt"))
        .when(pl.col("domain").is_in(DOMAINS).not_() | pl.col("domain").is_null())
        .then(pl.lit("unknown domain (expected one of " + ", ".join(DOMAINS) + ")"))
        .when(metadata_ok.not_())
        .then(pl.lit("metadata is not a JSON object"))
        .otherwise(pl.lit(None, dtype=pl.String))
        .alias(QUARANTINE_REASON)
    )
    checked = df.with_columns(reason)
    valid = checked.filter(pl.col(QUARANTINE_REASON).is_null()).drop(QUARANTINE_REASON)
    bad = checked.filter(pl.col(QUARANTINE_REASON).is_not_null())
    return valid, bad
