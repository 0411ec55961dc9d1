"""Both task flows on a Dask cluster of two worker processes write what the local runner writes."""

from __future__ import annotations

import pytest

from flows.store import DatasetStore
from tests.tasks.conftest import small_config


@pytest.mark.slow
def test_dask_runner_gives_the_same_datasets_as_local(prefect_harness, tmp_path):
    from distributed import LocalCluster

    from flows.tasks.code import code_tasks
    from flows.tasks.logic import logic_tasks

    def run(home, **runner):
        cfg = small_config(home, runner={"shards": 2, **runner})
        return [logic_tasks(cfg)["manifest"], code_tasks(cfg)["manifest"]]

    local = run(tmp_path / "local")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        dask = run(tmp_path / "dask", kind="dask", dask_address=cluster.scheduler_address)
    for a, b in zip(local, dask, strict=True):
        assert a["steps"] == b["steps"] and a["rows"] == b["rows"] > 0
    for name in ("t-synlogic", "t-code"):
        assert DatasetStore(tmp_path / "local").read(name).equals(DatasetStore(tmp_path / "dask").read(name))
    # the code data reads no other dataset: overlaps with the logic data are settled where a curriculum
    # reads both (flows/curriculum/overlap.py), so neither producer's output depends on the other's
    assert local[1]["parents"] == []
