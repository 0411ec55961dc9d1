import json

import polars as pl
import pytest

from flows.errors import InputError
from flows.store import DatasetStore, StepCount


def test_versions_manifest_and_quarantine(tmp_path):
    store = DatasetStore(tmp_path)
    m1 = store.write("items", pl.DataFrame({"x": [1, 2, 3]}), params={"seed": 0})
    q = pl.DataFrame({"x": [9], "reason": ["bad"]})
    m2 = store.write(
        "items",
        pl.DataFrame({"x": [1, 2]}),
        parents=[m1.ref],
        steps=[StepCount("dedup", 3, 2, "dup")],
        quarantine=q,
    )
    assert (m1.version, m2.version) == (1, 2)
    assert store.latest("items") == 2
    assert store.read("items")["x"].to_list() == [1, 2]
    assert store.read("items", 1)["x"].to_list() == [1, 2, 3]
    assert store.quarantine("items").to_dicts() == [{"x": 9, "reason": "bad"}]
    manifest = store.manifest("items")
    assert manifest.parents == ["items@v1"] and manifest.steps[0].removed == 1
    assert manifest.quarantined == 1 and manifest.code_version
    raw = json.loads((store.path("items") / "manifest.json").read_text())
    assert raw["steps"][0] == {"step": "dedup", "rows_in": 3, "rows_out": 2, "reason": "dup", "removed": 1}
    assert store.names() == ["items"]


def test_unknown_and_invalid_names(tmp_path):
    store = DatasetStore(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        store.read("nope")
    with pytest.raises(InputError, match="invalid dataset name"):
        store.write("../escape", pl.DataFrame({"x": [1]}))


def test_write_killed_midway_leaves_previous_version_intact(tmp_path, kill_inside_write):
    """SIGKILL a writer while it is inside the version write: the store still reads the old version."""
    store = DatasetStore(tmp_path)
    store.write("items", pl.DataFrame({"x": [1, 2, 3]}))
    kill_inside_write(tmp_path, "items", list(range(1000)))
    fresh = DatasetStore(tmp_path)
    assert fresh.latest("items") == 1
    assert fresh.versions("items") == [1]
    assert fresh.read("items")["x"].to_list() == [1, 2, 3]
    # The next write still works and takes the next version number.
    assert fresh.write("items", pl.DataFrame({"x": [7]})).version == 2
