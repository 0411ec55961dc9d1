"""Which prerequisites code in this process has needed: each is a name, the sandboxes' code paths report
each use through `use` just before they need it, and `watch` collects those reports (the tests hold every
producer flow to its declared ``PREREQUISITES`` with it).

How to tell whether this machine has one and the script that installs it are declared in
sandboxes/prerequisites.py, whose checks run the sandboxes; this module imports none of them, so the
sandboxes can report their uses without an import circle.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

PROCESS_SANDBOX = "process-sandbox"
DOCKER_ENGINE = "docker-engine"
NAMES = (PROCESS_SANDBOX, DOCKER_ENGINE)
BACKENDS = {"process": PROCESS_SANDBOX, "docker": DOCKER_ENGINE}  # what each sandbox backend needs

_watchers: list[set[str]] = []
_lock = threading.Lock()


def use(name: str) -> None:
    """Called by a code path just before it needs the prerequisite (the sandboxes' own code does)."""
    if name not in NAMES:
        raise KeyError(f"unknown prerequisite {name!r} (known: {', '.join(NAMES)})")
    with _lock:
        for used in _watchers:
            used.add(name)


@contextlib.contextmanager
def watch() -> Iterator[set[str]]:
    """The names of the prerequisites used in this process (any thread) while the block runs."""
    used: set[str] = set()
    with _lock:
        _watchers.append(used)
    try:
        yield used
    finally:
        with _lock:
            _watchers.remove(used)
