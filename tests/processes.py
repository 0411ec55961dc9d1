"""Real background processes for the scale-out, fault, interrupt and Prefect UI tests (`m1` servers and
commands): starting one that is stopped with everything it started, waiting until it is ready, and
interrupting one as a terminal's Ctrl-C or a process manager's SIGTERM does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


@dataclass
class Stopped:
    """How a command ended after a signal."""

    returncode: int
    seconds: float  # from the signal to the command's exit
    stdout: str
    stderr: str
    left: list[str]  # command lines of the processes it started that outlived it
    started: list[str]  # command lines of the processes it had started when the signal came

    def __str__(self) -> str:
        return (
            f"exit {self.returncode} {self.seconds:.1f} s after the signal; left running: {self.left}\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-5000:]}"
        )


def interrupt(
    args: list[str],
    env: dict[str, str],
    ready: Callable[[], bool],
    signum: int,
    tmp: Path,
    *,
    group: bool = True,
    timeout: float = 600,
) -> Stopped:
    """Run ``args`` as a terminal runs a command (the foreground process group of its own), wait until
    ``ready()``, then send ``signum`` as Ctrl-C does (to the whole process group, ``group``) or as a
    process manager does (to the process); wait for the exit and look for what it left running."""
    out, err = tmp / "stdout.txt", tmp / "stderr.txt"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=o, stderr=e, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f"ended before the signal:\n{out.read_text()}\n{err.read_text()}"
            assert time.monotonic() < deadline, f"not ready in {timeout} s:\n{err.read_text()[-3000:]}"
            time.sleep(0.05)
        tree = psutil.Process(proc.pid).children(recursive=True)
        started = []
        for child in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                started.append(" ".join(child.cmdline()))
        t0 = time.monotonic()
        os.killpg(proc.pid, signum) if group else proc.send_signal(signum)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        seconds = time.monotonic() - t0
        time.sleep(0.5)  # a process killed with the command is gone by now
        left = []
        for child in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                    left.append(" ".join(child.cmdline()))
    finally:
        stop(proc)
    return Stopped(proc.returncode, seconds, out.read_text(), err.read_text(), left, started)
