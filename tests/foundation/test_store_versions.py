"""Store edge cases the two-version tests miss: the third version, and a dataset whose first write died."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

from flows.errors import InputError
from flows.store import DatasetStore, Manifest, StepCount


def test_third_version_is_numbered_three_and_read_as_latest(tmp_path):
    """Two writes cannot tell "last + 1" from "first + 1" or "count": the third write can."""
    store = DatasetStore(tmp_path)
    made = [store.write("items", pl.DataFrame({"x": [v] * v})) for v in (1, 2, 3)]
    assert [m.version for m in made] == [1, 2, 3]
    assert [m.ref for m in made] == ["items@v1", "items@v2", "items@v3"]
    assert store.versions("items") == [1, 2, 3]
    assert store.latest("items") == 3
    assert store.path("items").name == "v0003"
    assert store.read("items")["x"].to_list() == [3, 3, 3]
    assert store.manifest("items").version == 3 and store.manifest("items").rows == 3
    for v in (1, 2, 3):  # every older version stays readable by number
        assert store.read("items", v)["x"].to_list() == [v] * v
        assert store.manifest("items", v).version == v


def test_versions_sort_numerically_past_four_digits(tmp_path):
    """Folder names are zero-padded to four digits; v10000 must still sort after v9999."""
    store = DatasetStore(tmp_path)
    store.write("items", pl.DataFrame({"x": [0]}))
    (tmp_path / "datasets" / "items" / "v0001").rename(tmp_path / "datasets" / "items" / "v9999")
    assert store.write("items", pl.DataFrame({"x": [1]})).version == 10000
    assert store.versions("items") == [9999, 10000]
    assert store.write("items", pl.DataFrame({"x": [2]})).version == 10001
    assert store.read("items")["x"].to_list() == [2]


def test_dataset_whose_first_write_was_killed_is_not_listed(tmp_path, kill_inside_write):
    """SIGKILL inside the first write of a new dataset: its folder (with the half-built version) exists,
    but the dataset has no complete version, so names() must not list it and reading it fails cleanly."""
    store = DatasetStore(tmp_path)
    store.write("done", pl.DataFrame({"x": [1]}))
    kill_inside_write(tmp_path, "partial", [1, 2])
    left = tmp_path / "datasets" / "partial"
    assert left.is_dir() and any(left.iterdir()), "the killed write should leave its temporary folder"
    fresh = DatasetStore(tmp_path)
    assert fresh.names() == ["done"]
    assert fresh.versions("partial") == [] and fresh.latest("partial") is None
    with pytest.raises(InputError, match="does not exist"):
        fresh.read("partial")
    # Writing it again works and is its first version.
    assert fresh.write("partial", pl.DataFrame({"x": [5]})).version == 1
    assert fresh.names() == ["done", "partial"]


def test_manifest_file_is_stable_text_and_round_trips(tmp_path):
    """manifest.json is indented with sorted keys (diffable between versions); values JSON cannot hold
    are written as text; steps, params and counts read back as written."""
    store = DatasetStore(tmp_path)
    before = time.time()
    store.write(
        "items",
        pl.DataFrame({"x": [1, 2]}),
        params={"source": Path("/data/in.jsonl"), "seed": 3},
        steps=[StepCount("dedup", 3, 2, "dup"), StepCount("clean", 2, 2)],
    )
    raw = (store.path("items") / "manifest.json").read_text()
    assert raw == json.dumps(json.loads(raw), indent=2, sort_keys=True)
    m = store.manifest("items")
    assert m.params == {"source": "/data/in.jsonl", "seed": 3}
    assert m.steps == [StepCount("dedup", 3, 2, "dup"), StepCount("clean", 2, 2, "")]
    assert m.quarantined == 0 and before <= m.created <= time.time()
    # Defaults are empty containers, not null.
    bare = store.write("bare", pl.DataFrame({"x": [1]}))
    assert json.loads((store.path("bare") / "manifest.json").read_text())["params"] == {}
    assert store.manifest("bare").params == {} and bare.parents == []


def test_manifest_without_a_step_reason_reads_as_empty_reason():
    """A step written without a reason (older manifests) reads back with an empty one."""
    text = json.dumps(
        {"name": "a", "version": 1, "rows": 2, "steps": [{"step": "clean", "rows_in": 3, "rows_out": 2}]}
    )
    assert Manifest.from_json(text).steps == [StepCount("clean", 3, 2, "")]


def test_quarantine_is_per_version(tmp_path):
    store = DatasetStore(tmp_path)
    store.write("items", pl.DataFrame({"x": [1]}))
    store.write("items", pl.DataFrame({"x": [2]}), quarantine=pl.DataFrame({"x": [9]}))
    assert store.quarantine("items", 1) is None
    assert store.quarantine("items")["x"].to_list() == [9]
    assert store.manifest("items", 1).quarantined == 0 and store.manifest("items").quarantined == 1


def test_default_root_is_m1_home(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_HOME", str(tmp_path / "home"))
    assert DatasetStore().root == tmp_path / "home"
    DatasetStore().write("items", pl.DataFrame({"x": [1]}))
    assert (tmp_path / "home" / "datasets" / "items" / "LATEST").read_text() == "1\n"
    monkeypatch.delenv("M1_HOME")
    monkeypatch.chdir(tmp_path)
    assert DatasetStore().root == tmp_path / ".m1"


def test_same_content_is_the_same_version(tmp_path):
    """A rerun on unchanged input writes nothing new: a stage that fingerprints the version stays fresh.
    Rows, quarantine, params, parents and steps all count; the code version and the time do not."""
    store = DatasetStore(tmp_path)
    frame = pl.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    first = store.write("items", frame, params={"seed": 0}, steps=[StepCount("clean", 4, 3, "bad")])
    rebuilt = pl.concat([frame.head(1), frame.tail(2)], rechunk=False)  # the same rows, in two chunks
    again = store.write("items", rebuilt, params={"seed": 0}, steps=[StepCount("clean", 4, 3, "bad")])
    assert again == first and store.versions("items") == [1] and store.latest("items") == 1
    assert len(list((tmp_path / "datasets" / "items").iterdir())) == 2  # v0001 and LATEST, no leftovers
    assert len(first.content) == 64 and store.manifest("items").content == first.content
    changes = [
        {"df": frame.head(2)},
        {"df": frame, "params": {"seed": 1}},
        {"df": frame, "parents": ["other@v1"]},
        {"df": frame, "steps": [StepCount("clean", 5, 3, "bad")]},
        {"df": frame, "quarantine": pl.DataFrame({"x": [9]})},
        {"df": frame, "params": {"seed": 0}, "steps": [StepCount("clean", 4, 3, "bad")]},  # back to v1's
    ]
    made = [store.write("items", **kw).version for kw in changes]
    assert made == [2, 3, 4, 5, 6, 7]  # each differs from the latest (the last one from v6, not v1)
    assert (
        store.write("items", frame, params={"seed": 0}, steps=[StepCount("clean", 4, 3, "bad")]).version == 7
    )


def test_a_version_that_does_not_exist_is_one_clear_error(tmp_path):
    store = DatasetStore(tmp_path)
    store.write("items", pl.DataFrame({"x": [1]}))
    store.write("items", pl.DataFrame({"x": [2]}))
    for read in (store.read, store.manifest, store.quarantine):
        with pytest.raises(InputError, match=r"^dataset 'items' has no version 9 \(versions: v1, v2\)$"):
            read("items", 9)
    assert store.read("items", 1)["x"].to_list() == [1]
