"""Isolated execution of untrusted programs behind one interface, with two backends:

- ``process``: Linux namespaces (bubblewrap) + rlimits as a per-run unprivileged uid. Starts in
  milliseconds; the default for reward verification.
- ``docker``: a container per run on the local Docker engine (read-only rootfs, no network, no
  capabilities, cgroup memory/pids limits). A stronger wall (seccomp, cgroups) at a higher start cost.

    from sandboxes import Limits, get_sandbox
    result = get_sandbox("process").run(["python3", "main.py"], files={"main.py": src}, stdin=b"1 2\\n")
    result.status, result.stdout
"""

from __future__ import annotations

import os
from typing import Literal

from sandboxes import needs
from sandboxes.base import Program, Sandbox, SandboxUnavailable
from sandboxes.languages import LANGUAGES
from sandboxes.limits import Limits, RunResult, Status
from sandboxes.process import ProcessSandbox

__all__ = [
    "LANGUAGES",
    "Limits",
    "Program",
    "RunResult",
    "Sandbox",
    "SandboxUnavailable",
    "Status",
    "get_sandbox",
]

_cache: dict[str, Sandbox] = {}
_cache_pid = os.getpid()


def get_sandbox(backend: Literal["process", "docker"] = "process") -> Sandbox:
    """The sandbox for a backend (one instance per process). Raises SandboxUnavailable with the fix
    when the backend cannot run here (no bubblewrap, no Docker engine)."""
    global _cache_pid
    if _cache_pid != os.getpid():  # a forked worker: never share the parent's engine connections
        _cache.clear()
        _cache_pid = os.getpid()
    if backend in needs.BACKENDS:  # every use reported, cached or not (sandboxes/needs.py)
        needs.use(needs.BACKENDS[backend])
    if backend not in _cache:
        if backend == "process":
            _cache[backend] = ProcessSandbox()
        elif backend == "docker":
            from sandboxes.container import DockerSandbox  # the docker SDK is only needed here

            _cache[backend] = DockerSandbox()
        else:
            raise ValueError(f"unknown sandbox backend {backend!r}; use 'process' or 'docker'")
    return _cache[backend]
