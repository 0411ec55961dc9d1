"""The experiment's items: the pipeline's own math and logic data, split into training and held-out items.

When the store holds a run's ``{run}-curated`` and ``{run}-synlogic`` datasets, those are used as they are.
Otherwise the same data is made the way the pipeline makes it: math word problems from
flows/data/synthetic_math.py through the curation steps of flows/curate (exact dedup, MinHash near-dup,
n-gram decontamination, answer check), and logic puzzles from the generators in verifiers/logic/.

The logic tasks are the ones with short answers (a count, a letter, yes/no, a bit string): a model of a
few hundred thousand parameters answers them right some of the time after its warm start, so the reward
starts between 0 and 1 and there is something for RL to improve. Puzzles with grid answers would score
0 for every algorithm and compare nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from flows.config import DataConfig
from flows.curate import decontaminate, exact_dedup, extract_answers, minhash_dedup
from flows.curriculum.mixture import difficulties, heldout_mask
from flows.data.synthetic_math import generate_for
from flows.datasets import CURATED, SYNLOGIC, dataset_name
from flows.schema import validate_items
from flows.store import DatasetStore

LOGIC_TASKS = (
    "object_counting",
    "boolean_expressions",
    "web_of_lies",
    "dyck_language_errors",
    "word_sorting_mistake",
    "bit_manipulation",
)


@dataclass(frozen=True)
class Items:
    train: list[dict[str, Any]]
    heldout: list[dict[str, Any]]
    source: str  # where they came from, for the report

    @property
    def domains(self) -> set[str]:
        return {r["domain"] for r in self.train + self.heldout}


def generated_math(n_problems: int, seed: int) -> pl.DataFrame:
    """Synthetic math problems, curated by the pipeline's steps (the planted defects are removed)."""
    # heavy: prefect
    from flows.curate.flow import benchmarks

    cfg = DataConfig(n_problems=n_problems, seed=seed)
    df, _ = validate_items(generate_for(cfg), where="synthetic-math")
    for step in (
        exact_dedup,
        lambda d: minhash_dedup(d, threshold=0.7, num_perm=128, shingle_size=5),
        lambda d: decontaminate(d, benchmarks(cfg), ngram=13),
        extract_answers,
    ):
        df = step(df).kept
    return df


def generated_logic(per_task: int, seed: int, tasks: tuple[str, ...] = LOGIC_TASKS) -> pl.DataFrame:
    """`per_task` puzzles of each task at its easiest level, as canonical items."""
    # heavy: networkx, numpy (verifiers.logic loads every task)
    from verifiers.logic import get_task

    rows = []
    for name in tasks:
        task = get_task(name)
        for i in range(per_task):
            rows.append(task.generate(task.difficulties[0], seed * 1_000_000 + i).to_item(i))
    df, _ = validate_items(pl.DataFrame(rows), where="logic generators")
    return df


def load_items(
    *,
    run: str | None,
    home: str | None,
    n_math: int,
    logic_per_task: int,
    heldout_fraction: float,
    max_difficulty: float | None = None,
    seed: int = 0,
) -> Items:
    """The store's `{run}-curated` + `{run}-synlogic` when both exist, else freshly generated items.

    Logic items from the store are restricted to the short-answer tasks above (see the module doc)."""
    store = DatasetStore(home)
    names = [dataset_name(run, CURATED), dataset_name(run, SYNLOGIC)] if run else []
    if names and all(store.latest(n) is not None for n in names):
        math = store.read(names[0])
        logic = store.read(names[1]).filter(pl.col("task").is_in(list(LOGIC_TASKS)))
        source = f"store: {names[0]} v{store.latest(names[0])}, {names[1]} v{store.latest(names[1])}"
    else:
        math, logic = generated_math(n_math, seed), generated_logic(logic_per_task, seed)
        source = (
            f"generated: synthetic_math ({n_math} problems, curated) + {logic_per_task} puzzles of each of "
            f"{', '.join(LOGIC_TASKS)}"
        )
    columns = ["id", "source", "domain", "task", "prompt", "reference", "metadata"]
    df = pl.concat([math.select(columns), logic.select(columns)], how="vertical_relaxed")
    if max_difficulty is not None:  # the band the model can learn; items without a difficulty stay
        level = pl.Series(difficulties(df), dtype=pl.Float64)
        df = df.filter(level.is_null() | (level <= max_difficulty))
        source += f"; difficulty <= {max_difficulty:g}"
    # The pipeline's own split (as every stage's): the same item is held out whatever else is present.
    held = heldout_mask(df["id"], heldout_fraction)
    return Items(
        train=df.filter(~held).to_dicts(), heldout=df.filter(held).sort("id").to_dicts(), source=source
    )
