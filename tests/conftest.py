"""Shared fixtures. Tests never touch the user's ./.m1 or Prefect home."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
import torch

from tests.fakes.openai import openai_loopback, openai_server  # noqa: F401 - the one fake OpenAI-compatible server

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Bench tests check output contracts on a machine shared with other jobs: they must not flake when a
# ratio is refused for uneven load. The refusal itself is tested in tests/foundation/test_bench_load.py.
os.environ.setdefault("M1_BENCH_LOAD_TOLERANCE", "inf")
# Benches run by tests record their runs in a folder of this session, never in the committed history
# (flows/bench/history/); set here, not by setdefault, so no outer setting can point tests at it.
os.environ["M1_BENCH_HISTORY"] = tempfile.mkdtemp(prefix="m1-test-bench-history-")


@pytest.fixture(scope="session", autouse=True)
def bench_history_of_the_session():
    yield os.environ["M1_BENCH_HISTORY"]
    shutil.rmtree(os.environ["M1_BENCH_HISTORY"], ignore_errors=True)


# The tests' models and tensors are tiny: one intra-op thread is fastest, and two spinning OpenMP
# threads on a busy 2-core machine can make each small op 10-100x slower.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def m1_home(tmp_path, monkeypatch):
    """Every test gets its own dataset store."""
    home = tmp_path / "m1home"
    monkeypatch.setenv("M1_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def cli_environment_stays_in_its_test():
    """`flows.cli.main` points PREFECT_HOME at M1_HOME and sets COLUMNS in os.environ, as an `m1` process
    must; run in-process by a test, it would hand the test's (then deleted) folder to every later test's
    subprocesses, whose Prefect then warns on stderr."""
    saved = {name: os.environ.get(name) for name in ("PREFECT_HOME", "COLUMNS")}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _sandbox_or_skip(kind: str, missing: str):
    from sandboxes import SandboxUnavailable, get_sandbox

    try:
        return get_sandbox(kind)
    except SandboxUnavailable as exc:
        pytest.skip(f"{missing}: {exc}")


@pytest.fixture(scope="session")
def process_sandbox():
    """The process sandbox, or a skip that says why this machine has none."""
    return _sandbox_or_skip("process", "process sandbox unavailable")


@pytest.fixture(scope="session")
def docker_sandbox():
    """The Docker sandbox, or a skip that says why this machine has none."""
    return _sandbox_or_skip("docker", "Docker engine unavailable")


@pytest.fixture(scope="session")
def prefect_harness():
    """A temporary Prefect server + database for tests that run flows (started once per session)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


# A test that needs a service the machine may lack skips and says why; where CI requires the service
# (`.ci/run` sets these), that skip is a failure with the same reason instead.
REQUIRED_BY = {
    "docker": "M1_REQUIRE_DOCKER",
    "postgres": "M1_REQUIRE_POSTGRES",
    "browser": "M1_REQUIRE_BROWSER",
}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        for marker, env in REQUIRED_BY.items():
            if item.get_closest_marker(marker) and os.environ.get(env) == "1":
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                reason = reason.removeprefix("Skipped: ")
                report.outcome = "failed"
                report.longrepr = f"{env}=1 requires this test to run, but it skipped: {reason}"
                break
    return report


@pytest.fixture(scope="session")
def dask_cluster():
    """A Dask LocalCluster of 3 single-threaded worker processes, shared by the session's tests of data
    flows on Dask: pass `runner={"kind": "dask", "dask_address": dask_cluster}` in the config."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address
