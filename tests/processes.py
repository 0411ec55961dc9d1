"""Waiting on a real background process (an `m1` server started by a test): the scale-out, fault and
Prefect UI tests share it."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest


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
