"""Malicious patches are contained: the host, the source repository and other tasks are unaffected,
each run ends within its limits, and a run stopped by a limit scores 0 with the limit named."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from verifiers.swe import SWEScorer, SWETask

pytestmark = [pytest.mark.docker, pytest.mark.slow]
WALL_S = 10
INIT = "src/isodate/__init__.py"


@pytest.fixture(scope="module")
def strict(scorer) -> SWEScorer:
    """The session's scorer with a short wall limit (fork bombs and loops end at it)."""
    return SWEScorer(scorer.repos_dir, replace(scorer.limits, wall_s=WALL_S), scorer.images)


def on_import(code: str) -> dict[str, str]:
    """Changes that run `code` when the library is imported (by every test)."""
    return {INIT: "\n" + code.strip() + "\n"}


def repo_state(repo: Path) -> tuple[str, str, str]:
    def git(*args):
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        ).stdout

    return git("rev-parse", "HEAD"), git("status", "--porcelain"), git("for-each-ref")


def no_containers_left(client) -> bool:
    from sandboxes.container import _OWNER, OWNER_LABEL

    return not client.containers.list(
        all=True, filters={"label": f"{OWNER_LABEL}={_OWNER}"}, ignore_removed=True
    )


def test_fork_bomb_stops_at_a_limit_and_scores_zero(strict, swe_tasks, make_patch):
    task = SWETask.from_row(swe_tasks[0])
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    start = time.monotonic()
    r = strict.repair(task, make_patch(task.base_commit, on_import(bomb)))
    assert time.monotonic() - start < WALL_S + 20
    assert r.reward == 0.0
    assert r.details["limit"] == "timeout", r.details
    assert "timeout limit" in r.details["reason"]
    assert no_containers_left(strict.images.client)


def test_network_is_unreachable_even_the_hosts_loopback(strict, swe_tasks, make_patch):
    task = SWETask.from_row(swe_tasks[0])
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        deadline = time.monotonic() + WALL_S + 20
        while time.monotonic() < deadline and not done.is_set():
            try:
                accepted.append(server.accept())
            except TimeoutError:
                pass

    done = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    probe = (
        "import socket\n"
        f"for host in ('127.0.0.1', 'localhost'):\n"
        f"    try:\n        socket.create_connection((host, {port}), timeout=2).sendall(b'leak')\n"
        "    except OSError:\n        pass"
    )
    try:
        r = strict.repair(task, make_patch(task.base_commit, on_import(probe)))
    finally:
        done.set()
        thread.join()
        server.close()
    assert not accepted, "a container reached a server on the host"
    assert r.reward == 0.0  # the probe does not fix the bug, and nothing escaped


def test_writes_outside_the_repository_change_nothing(strict, swe_tasks, make_patch, swe_repos):
    task = SWETask.from_row(swe_tasks[0])
    repo = swe_repos / task.repo
    before = repo_state(repo)
    marker = f"m1-swe-escape-{uuid.uuid4().hex}"
    host_file = Path("/tmp") / marker
    escape = (
        "import os\n"
        f"for path in ('/src/{marker}', '/etc/{marker}', '/work/{marker}', '/{marker}', '{repo}/{marker}',"
        f" '/testbed/../{marker}', '/tmp/{marker}', '/src/src/isodate/__init__.py'):\n"
        "    try:\n        with open(path, 'a') as fh:\n            fh.write('pwned')\n    except OSError:\n        pass"
    )
    r = strict.repair(task, task.patch + make_patch(task.base_commit, on_import(escape)))
    assert r.details["resolved"] is True, r.details  # the writes failed quietly; the fix itself is right
    assert not host_file.exists() and not (repo / marker).exists()
    assert repo_state(repo) == before
    # the image is unchanged: the next run of the same task sees none of those writes
    probe = f"import os\n\ndef test_clean():\n    assert not os.path.exists('/src/{marker}')\n"
    again = strict.run(task, ["tests/test_probe.py"], extra={"tests/test_probe.py": probe})
    assert "PASSED tests/test_probe.py::test_clean" in again.test_output, again.log[-2000:]


def test_patch_paths_outside_the_repository_are_refused(strict, swe_tasks):
    task = SWETask.from_row(swe_tasks[0])
    escape = "--- a/../../outside.txt\n+++ b/../../outside.txt\n@@ -0,0 +1 @@\n+pwned\n"
    r = strict.repair(task, escape)
    assert (
        r.reward == 0.0
        and r.details["reason"] == "patch touches files outside the repository: ../../outside.txt"
    )
    absolute = "--- /dev/null\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+pwned\n"
    assert "outside the repository" in strict.repair(task, absolute).details["reason"]


def test_a_test_that_kills_its_parent_scores_zero_and_others_are_unaffected(strict, swe_tasks, make_patch):
    victim, other = (SWETask.from_row(row) for row in swe_tasks)
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)"
    attack = victim.patch + make_patch(victim.base_commit, on_import(killer))
    with ThreadPoolExecutor(2) as pool:
        hostile = pool.submit(strict.repair, victim, attack)
        honest = pool.submit(strict.repair, other, other.patch)
        hostile, honest = hostile.result(), honest.result()
    assert hostile.reward == 0.0 and hostile.details["resolved"] is False
    assert "did not complete" in hostile.details["reason"] or "not usable" in hostile.details["reason"]
    assert honest.reward == 1.0, honest.details
    assert no_containers_left(strict.images.client)
