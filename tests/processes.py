"""Real background processes for the scale-out, fault and Prefect UI tests (`m1` servers and commands):
starting one that is stopped with everything it started, and waiting until it is ready."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def started(args: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """A background process in a session of its own, its output in ``log`` and ``env`` its whole
    environment (default: this one's); stopped on the way out with everything it started, even on failure."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    # A served deployment runs each flow run in a session of its own: collect the whole tree first.
    tree: list[psutil.Process] = []
    with contextlib.suppress(psutil.NoSuchProcess):
        tree = psutil.Process(proc.pid).children(recursive=True)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for child in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()


def wait_until(ready: Callable[[], bool], what: str, proc: subprocess.Popen, log: Path, timeout: float = 180):
    """Poll ``ready`` until it holds; fail with the end of ``log`` if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what}: exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if ready():
                return
        time.sleep(0.3)
    pytest.fail(f"{what}: not ready after {timeout}s:\n{log.read_text()[-3000:]}")
