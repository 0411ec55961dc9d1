"""Shared pieces of the foundation tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import flows.store


def _kill_inside_write(root: Path, name: str, values: list[int]) -> None:
    """Run ``DatasetStore(root).write(name, {"x": values})`` in a child and SIGKILL it after the data file
    is written but before the version is renamed into place."""
    marker = root / "writing"
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
        DatasetStore({str(root)!r}).write({name!r}, pl.DataFrame({{"x": {values!r}}}))
        """
    )
    # The child imports this checkout's flows (the one under test), wherever pytest runs from.
    checkout = str(Path(flows.store.__file__).resolve().parents[1])
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.time() + 60
    while not marker.exists():
        assert time.time() < deadline and proc.poll() is None, "writer never reached the write"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture
def kill_inside_write():
    return _kill_inside_write
