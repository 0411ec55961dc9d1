"""What built each dataset version (flows/store.py `BUILT_FROM.json`, flows/lineage.py `reuse_or_build`):
a writer's rerun on the inputs it recorded reuses its version without doing the work, one on other inputs
does the work and says what changed, each writer keeps its own record, and a reused version becomes the
latest again."""

from __future__ import annotations

import logging

import polars as pl
import pytest

from flows.lineage import reuse_or_build
from flows.store import DatasetStore
from tests.tasks.conftest import frame, item

LOG = logging.getLogger("m1.test.records")


def inputs(n: int, lr: float = 0.1) -> dict:
    return {"config": {"logic.n_items": n, "train.rl_lr": lr}, "datasets": {"t-curated": 1}}


def rows(n: int) -> pl.DataFrame:
    return frame([item(f"i{k}", f"question {k}") for k in range(n)])


@pytest.fixture
def store(tmp_path) -> DatasetStore:
    return DatasetStore(tmp_path)


def test_no_record_means_not_built_yet(store):
    assert store.built_from("t-x", "w") is None
    assert store.reusable("t-x", "w", inputs(2)) is None
    assert store.why_rebuilt("t-x", "w", inputs(2)) == "not built yet"


def test_a_record_is_reused_for_the_same_inputs_only_and_names_what_changed(store):
    m = store.write("t-x", rows(2))
    first = store.record_built("t-x", "w", m.version, inputs(2), {"manifest": {"version": 1}})
    assert first["reason"] == "first build" and first["version"] == 1
    assert store.reusable("t-x", "w", inputs(2)) == first
    assert store.why_rebuilt("t-x", "w", inputs(2)) == ""
    assert store.reusable("t-x", "w", inputs(3)) is None
    assert store.why_rebuilt("t-x", "w", inputs(3, lr=0.2)) == "logic.n_items 2 -> 3; train.rl_lr 0.1 -> 0.2"
    second = store.record_built("t-x", "w", store.write("t-x", rows(3)).version, inputs(3), {})
    assert second["reason"] == "logic.n_items 2 -> 3" and second["version"] == 2
    again = store.record_built("t-x", "w", 2, inputs(3), {})  # built again from the same inputs
    assert again["reason"] == "logic.n_items 2 -> 3"  # why the version exists stays what it was


def test_each_writer_has_its_own_record(store):
    store.write("t-x", rows(2))
    store.record_built("t-x", "curate", 1, inputs(2), {})
    store.write("t-x", rows(1))
    store.record_built("t-x", "pass-rate", 2, inputs(9), {})
    assert store.reusable("t-x", "curate", inputs(2))["version"] == 1
    assert store.reusable("t-x", "pass-rate", inputs(9))["version"] == 2
    assert store.reusable("t-x", "curate", inputs(9)) is None


def test_a_record_whose_version_is_gone_is_not_reused(store):
    store.write("t-x", rows(2))
    store.record_built("t-x", "w", 1, inputs(2), {})
    store.write("t-x", rows(3))
    (store.path("t-x", 1) / "manifest.json").unlink()
    assert store.reusable("t-x", "w", inputs(2)) is None
    assert store.why_rebuilt("t-x", "w", inputs(2)) == "its version v1 is gone"


def test_reuse_or_build_builds_once_and_then_returns_the_record_making_it_latest(store):
    calls = []

    def build():
        calls.append(1)
        m = store.write("t-x", rows(2))
        return {"manifest": {"version": m.version, "rows": 2}, "tasks": [("step", "Completed")], "note": "x"}

    out = reuse_or_build(store, "t-x", "w", inputs(2), build, LOG)
    assert calls == [1] and not out["reused"] and out["built_because"] == "first build"
    assert out["tasks"] == [("step", "Completed")]
    store.write("t-x", rows(5))  # another writer's later version
    assert store.latest("t-x") == 2
    again = reuse_or_build(store, "t-x", "w", inputs(2), build, LOG)
    assert calls == [1] and again["reused"] and again["tasks"] == []
    assert again["manifest"] == {"version": 1, "rows": 2} and again["note"] == "x"
    assert store.latest("t-x") == 1  # the reused version is the current one again
    changed = reuse_or_build(store, "t-x", "w", inputs(4), build, LOG)
    assert calls == [1, 1] and not changed["reused"] and changed["built_because"] == "logic.n_items 2 -> 4"


def test_make_latest_refuses_a_version_that_does_not_exist(store):
    store.write("t-x", rows(2))
    with pytest.raises(Exception, match="has no version 7"):
        store.make_latest("t-x", 7)
