"""Shared pieces of the task-data tests: a small run config and a store with a planted curated set."""

from __future__ import annotations

import polars as pl
import pytest

from flows.config import PipelineConfig


def small_config(home, **sections) -> PipelineConfig:
    """A run named `t` in `home`, with small logic and code sections unless overridden."""
    data = {
        "name": "t",
        "home": str(home),
        "runner": {"shards": 2},
        "logic": {"n_items": 28},
        "code": {"n_problems": 12, "tests_per_problem": 4},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return PipelineConfig.model_validate(data)


def item(id_: str, prompt: str, domain: str = "math", task: str = "", metadata: str = "{}") -> dict:
    return {
        "id": id_,
        "source": "user",
        "domain": domain,
        "task": task,
        "prompt": prompt,
        "reference": "1",
        "metadata": metadata,
    }


def frame(rows: list[dict]) -> pl.DataFrame:
    from flows.schema import ITEM_COLUMNS

    return pl.DataFrame(rows, schema=ITEM_COLUMNS)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"
