"""Store edge cases the two-version tests miss: the third version, and a dataset whose first write died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest

import flows.store
from flows.errors import InputError
from flows.store import DatasetStore


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


def test_dataset_whose_first_write_was_killed_is_not_listed(tmp_path):
    """SIGKILL inside the first write of a new dataset: its folder (with the half-built version) exists,
    but the dataset has no complete version, so names() must not list it and reading it fails cleanly."""
    store = DatasetStore(tmp_path)
    store.write("done", pl.DataFrame({"x": [1]}))
    marker = tmp_path / "writing"
    script = textwrap.dedent(
        f"""
        import time, pathlib, polars as pl
        from flows.store import DatasetStore
        orig = pl.DataFrame.write_parquet
        def slow(self, path, *a, **k):
            orig(self, path, *a, **k)
            pathlib.Path({str(marker)!r}).write_text("x")
            time.sleep(60)  # killed here: data written, version not yet renamed into place
        pl.DataFrame.write_parquet = slow
        DatasetStore({str(tmp_path)!r}).write("partial", pl.DataFrame({{"x": [1, 2]}}))
        """
    )
    # The child imports this checkout's flows (the one under test), wherever pytest runs from.
    root = str(Path(flows.store.__file__).resolve().parents[1])
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.time() + 60
    while not marker.exists():
        assert time.time() < deadline and proc.poll() is None, "writer never reached the write"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
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
