"""A stage's items: read its datasets from the store, keep what its mixture names, weight each item.

A mixture key is a domain (``math``) or a domain/task (``logic/sudoku``); an item takes the weight of
its most specific key, shared equally by all items under that key, so a key's weight is the share of
prompts drawn from it whatever its size. A key that matches no item is an error, not a silent zero.
"""

from __future__ import annotations

import json

import polars as pl

from flows.curriculum import Curriculum, Stage
from flows.errors import InputError
from flows.schema import validate_items
from flows.store import DatasetStore


def mixture_key(domain: str, task: str | None, mixture: dict[str, float]) -> str | None:
    specific = f"{domain}/{task}"
    if task and specific in mixture:
        return specific
    return domain if domain in mixture else None


def mixture_weights(
    df: pl.DataFrame, mixture: dict[str, float], *, where: str
) -> tuple[pl.DataFrame, list[float]]:
    """The rows some key selects (with positive weight), and each row's sampling weight."""
    keys = [mixture_key(d, t, mixture) for d, t in zip(df["domain"], df["task"], strict=True)]
    df = df.with_columns(pl.Series("mixture_key", keys, dtype=pl.String))
    counts = dict(df.group_by("mixture_key").len().iter_rows())
    missing = [k for k, w in mixture.items() if w > 0 and not counts.get(k)]
    if missing:
        present = sorted({f"{d}/{t}" for d, t in zip(df["domain"], df["task"], strict=True)})
        raise InputError(
            f"{where}: mixture key(s) {', '.join(missing)} match no items "
            f"(available: {', '.join(present[:12]) or 'none'})"
        )
    kept = df.filter(
        pl.col("mixture_key").is_not_null()
        & pl.col("mixture_key").is_in([k for k, w in mixture.items() if w > 0])
    )
    weights = [mixture[k] / counts[k] for k in kept["mixture_key"]]
    return kept.drop("mixture_key"), weights


def _difficulty(metadata: str) -> float | None:
    value = json.loads(metadata).get("difficulty")
    return float(value) if isinstance(value, int | float) else None


def stage_items(
    store: DatasetStore, curriculum: Curriculum, stage: Stage, run: str
) -> tuple[pl.DataFrame, list[float]]:
    """All items of the curriculum's datasets that the stage draws from, and their sampling weights."""
    frames = []
    for name in curriculum.dataset_names(run):
        df = store.read(name)
        valid, bad = validate_items(df, where=f"dataset {name}")
        if bad.height:
            raise InputError(
                f"dataset {name}: {bad.height} rows fail the item schema "
                f"(first: {bad['reason'][0]}); re-curate it"
            )
        frames.append(valid.select(list(valid.columns)))
    df = pl.concat(frames, how="diagonal_relaxed")
    if stage.min_difficulty is not None:
        hard_enough = [d is None or d >= stage.min_difficulty for d in map(_difficulty, df["metadata"])]
        df = df.filter(pl.Series(hard_enough))
    return mixture_weights(df, stage.mixture, where=f"stage {stage.name}")
