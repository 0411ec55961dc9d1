"""A wall-clock deadline for pure-Python work in the main thread that a swallowed interrupt cannot defeat.

math-verify bounds its work with one ``signal.alarm``: the handler raises once, wherever the interpreter
is. When that is inside a garbage-collector callback (a weakref's, a ``__del__``), Python prints
"Exception ignored" and the work goes on with no bound left: an answer such as ``9^{9^{9}}`` then runs
for as long as SymPy likes (CI's log showed one such swallowed timeout in a fuzz test that then ran 27
minutes). `deadline` raises again every ``retry_s`` after the first expiry until the block is left, so one
swallowed exception costs ``retry_s``, not the rest of the computation.

A swallowed raise goes to ``sys.unraisablehook``. While the block runs, `deadline` puts its own hook in
front: its own timeouts are expected and dropped quietly, anything else goes to the previous hook with
the alarm held off. Otherwise a re-fire could land inside that hook (pytest's, say, which then fails the
test with "Failed to process unraisable exception", as one CI run did).

Callers switch math-verify's own alarm off (``parsing_timeout=None``, ``timeout_seconds=None``: it would
cancel this one); its one-time warning that timeouts are then off is dropped here.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from math_verify.errors import TimeoutException  # a BaseException: `except Exception` in SymPy lets it by


class _DropTimeoutDisabled(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_DropTimeoutDisabled())


@dataclass
class Expiry:
    fired: bool = False  # the deadline passed while the block ran (even if its exception was swallowed)


@contextmanager
def deadline(seconds: float, retry_s: float = 0.05) -> Iterator[Expiry]:
    """Raise `TimeoutException` in the block after ``seconds``, and again every ``retry_s`` until it
    ends. Main thread only (signals are delivered there); the previous SIGALRM handler is restored."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("deadline() uses SIGALRM and works only in the main thread; run in a process pool")
    expiry = Expiry()
    armed = True
    held = False  # inside another hook: the next re-fire raises instead

    def expire(signum: int, frame: object) -> None:
        if armed and not held:
            expiry.fired = True
            raise TimeoutException(f"deadline of {seconds}s passed")

    previous_hook = sys.unraisablehook

    def unraisable(report: sys.UnraisableHookArgs) -> None:
        nonlocal held
        if isinstance(report.exc_value, TimeoutException):
            return  # ours, swallowed where it landed; the next re-fire follows in retry_s
        held = True
        try:
            previous_hook(report)
        finally:
            held = False

    previous = signal.signal(signal.SIGALRM, expire)
    sys.unraisablehook = unraisable
    signal.setitimer(signal.ITIMER_REAL, seconds, retry_s)
    try:
        yield expiry
    finally:
        armed = False  # a signal already pending when the block ends must not raise out of here
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = previous_hook
