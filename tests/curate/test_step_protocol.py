"""The data-step protocol (flows/curate/step.py): a step a user writes in a few lines runs through the one
Prefect wrapper (flows/curate/step_tasks.py) under its own name, shows up in the counts, and is cached on
its inputs and settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
from prefect import flow

from flows.curate.result import StepResult, split_by_reason
from flows.curate.step import MapReduceStep, Step
from flows.curate.step_tasks import map_reduce, mapped
from flows.runner import ROW, Tasks, cache_storage
from flows.schema import QUARANTINE_REASON
from flows.store import StepCount


@dataclass(frozen=True)
class ShortPrompts:
    name = "short-prompts"
    removes = "prompts under min_words words"
    retry = False
    min_words: int = 3

    def run(self, rows: pl.DataFrame) -> StepResult:
        short = rows["prompt"].str.split(" ").list.len() < self.min_words
        why = pl.when(short).then(pl.lit(f"under {self.min_words} words")).otherwise(None)
        return split_by_reason(rows, rows.select(why).to_series(), self.name, self.removes)


@dataclass(frozen=True)
class Measure:
    """The map half of SameLength: what it reads is only the prompts."""

    name = "measure"
    removes = "nothing (lengths for same-length)"
    retry = False

    def run(self, shard: pl.DataFrame) -> list[int]:
        return shard["prompt"].str.len_chars().to_list()


@dataclass(frozen=True)
class SameLength:
    """A map-reduce step: lengths per shard, then keep the first prompt of each length bucket."""

    name = "same-length"
    removes = "a prompt as long as an earlier one"
    retry = False
    bucket: int = 1  # a reduce-only setting
    mapper = Measure()

    def reduce(self, rows: pl.DataFrame, parts: list) -> StepResult:
        lengths = pl.Series([n // self.bucket for part in parts for n in part])
        first = lengths.is_first_distinct()
        reason = pl.Series(
            [None if keep else "as long as an earlier prompt" for keep in first], dtype=pl.String
        )
        return split_by_reason(rows, reason, self.name, self.removes)


PROMPTS = ["one two three", "too short", "a b c d", "x", "four words are here", "a b c e"]


@flow
def run_steps(min_words: int, home: str, bucket: int = 1) -> dict:
    tasks = Tasks()
    df = pl.DataFrame({"id": [f"i{i}" for i in range(len(PROMPTS))], "prompt": PROMPTS}).with_row_index(ROW)
    short = mapped(tasks, ShortPrompts(min_words), df, 2)
    same = map_reduce(tasks, SameLength(bucket), short.kept, 2)
    return {"short": short, "same": same, "states": tasks.states}


def test_a_new_step_is_a_few_lines_and_runs_through_the_one_wrapper(prefect_harness, tmp_path):
    assert isinstance(ShortPrompts(), Step) and isinstance(SameLength(), MapReduceStep)
    home = tmp_path / "home"
    home.mkdir()
    cached_flow = run_steps.with_options(result_storage=cache_storage(Path(home)))
    out = cached_flow(3, str(home))
    short, same = out["short"], out["same"]
    assert short.count == StepCount("short-prompts", 6, 4, "prompts under min_words words")
    assert short.kept["id"].to_list() == ["i0", "i2", "i4", "i5"]  # input order, across 2 shards
    assert short.removed.select("id", QUARANTINE_REASON).rows() == [
        ("i1", "under 3 words"),
        ("i3", "under 3 words"),
    ]
    assert same.count == StepCount("same-length", 4, 3, "a prompt as long as an earlier one")
    assert same.removed.select("id", QUARANTINE_REASON).rows() == [("i5", "as long as an earlier prompt")]
    assert out["states"] == [
        ("short-prompts", "Completed"),
        ("short-prompts", "Completed"),
        ("measure", "Completed"),
        ("measure", "Completed"),
        ("same-length", "Completed"),
    ]
    # Same inputs and settings: every task resumes from cache.
    again = cached_flow(3, str(home))
    assert {state for _, state in again["states"]} == {"Cached"}
    assert again["short"].kept.equals(short.kept)
    # A changed setting is a new cache key for the step it belongs to (and what it changes downstream).
    changed = cached_flow(4, str(home))
    assert [state for name, state in changed["states"] if name == "short-prompts"] == ["Completed"] * 2
    assert changed["short"].kept["id"].to_list() == ["i2", "i4", "i5"]
    # A reduce-only setting leaves the map half's cache alone (a dedup threshold recomputes no embeddings).
    rebucketed = cached_flow(3, str(home), bucket=100)
    assert [state for name, state in rebucketed["states"] if name == "measure"] == ["Cached"] * 2
    assert [state for name, state in rebucketed["states"] if name == "same-length"] == ["Completed"]
    assert rebucketed["same"].kept["id"].to_list() == ["i0"]
