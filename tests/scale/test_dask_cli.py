"""`m1 curate run --runner dask` on a machine with no Prefect server configured: the Dask workers report
to the one ephemeral server of the command, instead of each starting a temporary server of its own."""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest

from flows.store import DatasetStore

from .conftest import M1, ROOT

pytestmark = pytest.mark.slow

# Mapped over 2 shards; minhash-dedup is one task that runs the distributed engine on the same cluster
# (flows/curate/scale: the sketches are its first stage, not tasks of their own).
STEPS = ("clean", "exact-dedup", "decontaminate", "answer-check")


def test_curate_run_on_a_local_dask_cluster_reports_to_one_server(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # no server configured
    env |= {"M1_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(tmp_path / "prefect")}
    args = [*M1, "curate", "run", "--runner", "dask", "-s", "name=d", "-s", "data.n_problems=30"]
    args += ["-s", "runner.shards=2", "-s", "runner.workers=2"]
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert log.count("Starting temporary server") == 1, log[-3000:]
    assert "Creating a new Dask cluster" in log and "0 of 10 tasks resumed from cache" in log
    assert DatasetStore(tmp_path / "home").read("d-curated").height == 30
    with sqlite3.connect(tmp_path / "prefect" / "prefect.db") as db:
        runs = db.execute("SELECT name, state_type FROM task_run").fetchall()
    # every task run of the workers, in this one database (and the subflow's own run in its parent)
    tasks = sorted(name.rsplit("-", 1)[0] for name, _ in runs if not name.startswith("m1-curate-steps"))
    assert {state for _, state in runs} == {"COMPLETED"}, runs
    assert tasks == sorted(["generate"] + [s for s in STEPS for _ in range(2)] + ["minhash-dedup"]), runs
