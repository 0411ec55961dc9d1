"""A curriculum's items: read its datasets from the store, hold out a validation split, and weight each
training item by the stage's mixture.

A mixture key is a domain (``math``) or a domain/task (``logic/sudoku``); an item takes the weight of
its most specific key, shared equally by all items under that key, so a key's weight is the share of
prompts drawn from it whatever its size. A key that matches no item is an error, not a silent zero.

The datasets are deduplicated against each other first (flows/curriculum/overlap.py: an item of a later
dataset that duplicates one of an earlier dataset is left out). The held-out split is fixed by a hash of
each item's id, so it does not move when a dataset grows or when another dataset joins the curriculum:
training never sees an item that validation scores.

Not a flow: the data a stage flow reads from the store, and its mixture weights.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import polars as pl

from flows.config import MinhashConfig
from flows.curriculum import Curriculum, Stage
from flows.curriculum.overlap import separate_overlaps
from flows.errors import InputError
from flows.schema import validate_items
from flows.store import DatasetStore

KEY = "mixture_key"  # kept on each item so the step hooks can group rewards by key
DIFFICULTY = "difficulty"


@dataclass
class CurriculumData:
    train: pl.DataFrame
    heldout: pl.DataFrame
    refs: list[str]  # name@version of every dataset read: part of every stage's fingerprint
    overlaps: pl.DataFrame | None = None  # items left out as duplicates of an earlier dataset's, with why


def require_dataset(store: DatasetStore, curriculum: Curriculum, name: str) -> None:
    if store.latest(name) is None:
        raise InputError(
            f"dataset {name!r} does not exist in {store.datasets} (curriculum {curriculum.name} reads it; "
            "`m1 run` builds every dataset, `m1 curate run` the curated one)"
        )


def load_data(
    store: DatasetStore,
    curriculum: Curriculum,
    run: str,
    heldout_fraction: float,
    minhash: MinhashConfig | None = None,
    domain_fractions: Mapping[str, float] | None = None,
) -> CurriculumData:
    """Every item of the curriculum's datasets (latest versions), without the duplicates of an earlier
    dataset's items (`minhash`: `curate.minhash`), split into train and held-out: ``heldout_fraction`` of
    each domain, or its share in ``domain_fractions``."""
    frames, refs = [], []
    for name in curriculum.dataset_names(run):
        require_dataset(store, curriculum, name)
        df = store.read(name)
        refs.append(store.manifest(name).ref)
        valid, bad = validate_items(df, where=f"dataset {name}")
        if bad.height:
            raise InputError(
                f"dataset {name}: {bad.height} rows fail the item schema "
                f"(first: {bad['reason'][0]}); re-curate it"
            )
        frames.append((name, valid))
    kept, overlaps = separate_overlaps(frames, minhash or MinhashConfig())
    df = pl.concat(kept, how="diagonal_relaxed")
    shares = domain_fractions or {}
    held = heldout_mask(df["id"], [shares.get(d, heldout_fraction) for d in df["domain"]])
    return CurriculumData(df.filter(~held), df.filter(held), refs, overlaps)


def run_data(config, curriculum: Curriculum, store: DatasetStore | None = None) -> CurriculumData:
    """`load_data` as a run's config asks for it: its name, held-out shares and MinHash settings."""
    store = store or DatasetStore(config.home)
    return load_data(
        store, curriculum, config.name, config.eval.fraction, config.curate.minhash, config.eval.fractions
    )


def heldout_mask(ids: pl.Series, fraction: float | Sequence[float]) -> pl.Series:
    """True for the items of the validation split: a stable hash of the id below ``fraction`` (one share
    for every id, or one per id). An item held out at one share is held out at every larger one."""
    shares = [fraction] * len(ids) if isinstance(fraction, int | float) else fraction
    return pl.Series(
        [_hash(str(i)) < int(f * 2**32) for i, f in zip(ids, shares, strict=True)],
        dtype=pl.Boolean,
    )


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def mixture_key(domain: str, task: str | None, mixture: dict[str, float]) -> str | None:
    specific = f"{domain}/{task}"
    if task and specific in mixture:
        return specific
    return domain if domain in mixture else None


def with_keys(df: pl.DataFrame, mixture: dict[str, float]) -> pl.DataFrame:
    """The rows some key with positive weight selects, each with its key in the `mixture_key` column."""
    keys = [mixture_key(d, t, mixture) for d, t in zip(df["domain"], df["task"], strict=True)]
    df = df.with_columns(pl.Series(KEY, keys, dtype=pl.String))
    return df.filter(pl.col(KEY).is_in([k for k, w in mixture.items() if w > 0]))


def mixture_weights(
    df: pl.DataFrame, mixture: dict[str, float], *, where: str
) -> tuple[pl.DataFrame, list[float]]:
    """The rows some key selects (with positive weight), and each row's sampling weight."""
    kept = with_keys(df, mixture)
    counts = dict(kept.group_by(KEY).len().iter_rows())
    missing = [k for k, w in mixture.items() if w > 0 and not counts.get(k)]
    if missing:
        present = sorted({f"{d}/{t}" for d, t in zip(df["domain"], df["task"], strict=True)})
        raise InputError(
            f"{where}: mixture key(s) {', '.join(missing)} match no items "
            f"(available: {', '.join(present[:12]) or 'none'})"
        )
    return kept, [mixture[k] / counts[k] for k in kept[KEY]]


def difficulties(df: pl.DataFrame) -> list[float | None]:
    """Each item's ``metadata.difficulty`` (None when absent or not a number)."""

    def one(metadata: str) -> float | None:
        value = json.loads(metadata).get(DIFFICULTY)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    return [one(m) for m in df["metadata"]]


def dynamic_mixture(stage: Stage, items: Sequence[Mapping[str, Any]], levels: Sequence[float | None]):
    """The stage's dynamic-mixture step hook (m1model.rl.mixture_weights) over the pool's items, which
    carry their mixture key; ``levels`` are their difficulties (`difficulties`)."""
    # here, not at the top: m1model imports torch, which the commands that only read a curriculum's data skip
    # heavy: numpy
    from m1model.rl.mixture_weights import DynamicMixture, MixtureSettings

    settings = MixtureSettings(**{f.name: getattr(stage, f.name) for f in fields(MixtureSettings)})
    return DynamicMixture(settings, [item[KEY] for item in items], levels)


def difficulty_band(df: pl.DataFrame, stage: Stage) -> tuple[pl.DataFrame, list[str]]:
    """Items inside the stage's difficulty band, and a line per thing a user should know: how many the
    band removed, how many it could not judge (no difficulty: they are kept)."""
    lo, hi = stage.min_difficulty, stage.max_difficulty
    if lo is None and hi is None:
        return df, []
    levels = difficulties(df)
    inside = [d is None or ((lo is None or d >= lo) and (hi is None or d <= hi)) for d in levels]
    kept = df.filter(pl.Series(inside, dtype=pl.Boolean))
    band = f"[{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"
    notes = [f"stage {stage.name}: difficulty band {band} keeps {kept.height} of {df.height} items"]
    unknown = sum(d is None for d in levels)
    if unknown:
        notes.append(
            f"stage {stage.name}: {unknown} of {df.height} items have no metadata.{DIFFICULTY}; the band "
            "ignores them (map a column to it with mapping = {'metadata.difficulty' = '<column>'})"
        )
    if kept.height == 0:
        raise InputError(f"stage {stage.name}: the difficulty band {band} leaves none of {df.height} items")
    return kept, notes


def stage_items(data: CurriculumData, stage: Stage) -> tuple[pl.DataFrame, list[float], list[str]]:
    """The stage's training items with their mixture key, their sampling weights, and notes."""
    df, notes = difficulty_band(data.train, stage)
    kept, weights = mixture_weights(df, stage.mixture, where=f"stage {stage.name}")
    return kept, weights, notes
