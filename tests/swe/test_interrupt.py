"""An interrupted `m1 swe evaluate` leaves no container behind: SIGINT and SIGTERM remove its live
containers at once; after a SIGKILL the container ends by itself and `reap_orphans` removes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _owner(pid: int) -> str:
    from sandboxes.container import OWNER_LABEL, _boot_id

    return f"{OWNER_LABEL}={_boot_id()}:{pid}"


def _containers(client, pid: int) -> list:
    return client.containers.list(all=True, filters={"label": _owner(pid)}, ignore_removed=True)


@pytest.fixture
def slow_evaluation(tmp_path, swe_tasks, swe_repos, make_patch):
    """`m1 swe evaluate` on a prediction whose import sleeps for a minute, started in the background;
    yields (process, client) once its container is running."""
    from sandboxes.container import engine

    task = swe_tasks[0]
    sleeper = make_patch(task["base_commit"], {"src/isodate/__init__.py": "\nimport time\ntime.sleep(60)\n"})
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    (tmp_path / "preds.jsonl").write_text(
        json.dumps({"instance_id": task["instance_id"], "model_patch": sleeper}) + "\n"
    )
    m1 = Path(sys.executable).parent / "m1"
    cmd = [str(m1), "swe", "evaluate", "--tasks", str(tmp_path / "tasks.jsonl"), "--predictions",
           str(tmp_path / "preds.jsonl"), "--output", str(tmp_path / "out.jsonl"), "--repos", str(swe_repos)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ.copy())
    client = engine()
    deadline = time.monotonic() + 120
    worker = None  # the process that owns the containers: the `m1` supervisor's worker (flows/interrupts.py)
    while worker is None or not any(c.status == "running" for c in _containers(client, worker)):
        assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the evaluation never started its container"
        if worker is None and (children := psutil.Process(proc.pid).children()):
            (worker,) = [c.pid for c in children]
        time.sleep(0.2)
    yield proc, client, worker
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    from sandboxes.container import reap_orphans

    reap_orphans(client)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_evaluation_removes_its_containers(slow_evaluation, signum):
    proc, client, worker = slow_evaluation
    start = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=30)
    assert time.monotonic() - start < 20, "the interrupted run waited for its container"
    assert proc.returncode != 0
    assert not _containers(client, worker)


def test_killed_evaluation_leaves_an_orphan_that_is_reaped(slow_evaluation):
    from sandboxes.container import _alive, reap_orphans

    proc, client, worker = slow_evaluation
    proc.kill()  # the supervisor: its worker dies with it (PR_SET_PDEATHSIG), the container lives on
    proc.wait(timeout=30)
    # the worker's SIGKILL comes with its parent's death but it dies when next scheduled: on a busy
    # machine it can still be running right after the supervisor is gone (its container is not an orphan yet)
    deadline = time.monotonic() + 30
    while _alive(worker):
        assert time.monotonic() < deadline, "the worker outlived its supervisor"
        time.sleep(0.1)
    assert _containers(client, worker), "expected the orphaned container before reaping"
    assert reap_orphans(client) >= 1
    assert not _containers(client, worker)
