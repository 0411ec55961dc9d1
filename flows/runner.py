"""What every data subflow shares: its task runner, cached task results, shards, and retry rules.

A data subflow (curation, logic and code task synthesis, SWE validation) runs its steps as Prefect tasks
on the task runner `RunnerConfig` names: threads in this process, or Dask (prefect-dask) on a local
cluster or an existing scheduler. Task results persist in ``$M1_HOME/cache`` through a saved storage
block, which Dask workers load by reference, so a rerun with the same inputs resumes from cache on any
runner.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path

import polars as pl
from prefect import unmapped
from prefect.client.orchestration import get_client
from prefect.filesystems import LocalFileSystem
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

from flows.cache import CONTENT
from flows.config import RunnerConfig
from verifiers.endpoint import EndpointUnavailable

CACHED = {"cache_policy": CONTENT, "persist_result": True}
ROW = "_row"  # a hidden column carrying the global input order through sharded steps


def task_runner(r: RunnerConfig):
    if r.kind == "dask":
        # lazy: optional extra [dist] (prefect_dask)
        from prefect_dask import DaskTaskRunner

        if r.dask_address:
            return DaskTaskRunner(address=r.dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": r.workers, "threads_per_worker": 1})

    return ThreadPoolTaskRunner()


def cache_storage(root: Path):
    """The store's cache folder as a saved storage block (Dask workers load it by reference)."""
    block = LocalFileSystem(basepath=str(root / "cache"))
    block.save(f"m1-cache-{hashlib.sha256(str(root).encode()).hexdigest()[:16]}", overwrite=True)
    return block


def on_runner(subflow, runner: RunnerConfig, home: Path):
    """The subflow set up to run its tasks on the configured runner, with results cached under home."""
    configured = subflow.with_options(task_runner=task_runner(runner), result_storage=cache_storage(home))
    return functools.partial(_reporting_here, configured) if runner.kind == "dask" else configured


def _reporting_here(subflow, *args, **kwargs):
    """Run the subflow with its Dask tasks reporting to this process's Prefect server.

    prefect-dask ships the settings to the workers with each task. With no PREFECT_API_URL set, this
    process talks to the ephemeral server it started, which the settings do not name: every worker
    would start a temporary server of its own (half a minute each) and record its task runs there.
    Naming the ephemeral server's URL sends them here instead.
    """
    if PREFECT_API_URL.value():
        return subflow(*args, **kwargs)
    with get_client(sync_client=True) as client:
        url = str(client.api_url).rstrip("/")
    with temporary_settings({PREFECT_API_URL: url}):
        return subflow(*args, **kwargs)


@contextlib.contextmanager
def shared_cluster(runner: RunnerConfig) -> Iterator[RunnerConfig]:
    """For a DAG of several data subflows: one local Dask cluster for all of them (instead of one per
    subflow), as a RunnerConfig naming its scheduler. Other runners are passed through unchanged."""
    if runner.kind != "dask" or runner.dask_address:
        yield runner
        return
    # lazy: optional extra [dist] (distributed)
    from distributed import LocalCluster

    with LocalCluster(n_workers=runner.workers, threads_per_worker=1, dashboard_address=None) as cluster:
        yield runner.model_copy(update={"dask_address": cluster.scheduler_address})


def fingerprint(path: str | Path) -> str:
    """Content hash of a file or folder, so a cached step reruns when its input changes."""
    path = Path(path)
    digest = hashlib.sha256()
    for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if f.is_file():
            digest.update(f.name.encode())
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def transient(task, task_run, state) -> bool:
    """Prefect retry condition: retry what may succeed later (an endpoint that is down or overloaded,
    the Docker engine restarting), never a deterministic failure (bad data, a bug), which would fail
    the same way again."""
    try:
        state.result()
    except EndpointUnavailable:
        return True
    except Exception as exc:  # noqa: BLE001 - classify, never raise from a retry condition
        return _docker_transient(exc) or isinstance(exc, ConnectionError | TimeoutError)
    return False


def _docker_transient(exc: Exception) -> bool:
    try:
        # heavy: docker; lazy: optional (ImportError handled)
        from docker.errors import APIError
        from requests.exceptions import ConnectionError as RequestsConnectionError
    except ImportError:  # pragma: no cover - docker is a dependency
        return False
    if isinstance(exc, RequestsConnectionError):
        return True
    return isinstance(exc, APIError) and exc.status_code is not None and exc.status_code >= 500


RETRY = {"retries": 2, "retry_delay_seconds": [2, 10], "retry_condition_fn": transient}


def shards(df: pl.DataFrame, n: int, by: pl.Expr | None = None) -> list[pl.DataFrame]:
    """Row-range shards, or hash partitions of `by` (equal keys land in the same shard)."""
    n = max(1, min(n, df.height))
    if by is None:
        size = -(-df.height // n)
        return [df.slice(i * size, size) for i in range(n)]
    part = df.select((by.hash(seed=7) % n).alias("p"))["p"]
    return [df.filter(part == i) for i in range(n)]


class Tasks:
    """Submits tasks to the flow's task runner and records each run's final state (Cached or not)."""

    def __init__(self) -> None:
        self.states: list[tuple[str, str]] = []

    def map(self, step, items: list, *args) -> list:
        futures = step.map(items, *[unmapped(a) for a in args])
        results = [f.result() for f in futures]
        self.states += [(step.name, f.state.name) for f in futures]
        return results

    def one(self, step, *args):
        future = step.submit(*args)
        result = future.result()
        self.states.append((step.name, future.state.name))
        return result

    @property
    def cached(self) -> int:
        return sum(state == "Cached" for _, state in self.states)
