"""The harness that runs tests-as-programs *inside* the sandbox (see verifiers/code_programs.py).

The host never runs this file: it ships it into the run's work dir as ``m1_harness.py`` beside the
candidate (``solution.py``) and the tests, and the sandboxed ``main.py`` calls ``main()``. Standard
library only (pytest is imported inside the sandbox, for the pytest form alone).

One run executes the candidate and then every test in one Python process, as the benchmarks' own
harnesses do. Each test runs under a CPU timer (``ITIMER_PROF``) and a wall timer (``ITIMER_REAL``) of
its own, so a slow test is a TLE and the next one still runs; a ``MemoryError`` (the process sandbox's
address-space limit) is an MLE. Events go to the original stdout, one line each, after a marker and the
run's nonce (which came on stdin, so the candidate's own prints cannot be mistaken for them):

- ``{"start": key}`` before a test, ``{"unit": key, "verdict": ..., ...}`` after it;
- ``{"load": verdict, "error": ...}`` when the candidate (or the test setup) failed before any test;
- ``{"abort": error}`` when the test program itself raised outside a test (remaining tests cannot run);
- ``{"collected": [node ids]}`` (pytest form) once pytest has collected the tests.

A run that dies inside a test (a C-level loop past the timers, an OOM kill, ``os._exit``) leaves a
``start`` without its ``unit``: the host gives that test the run's own verdict.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import types

MARK = "\x1e__m1_unit__"
ERROR_CHARS = 300


class Timeout(BaseException):
    """A test (or the candidate's load) ran past its time limit. BaseException: ``except Exception``
    in the candidate's code does not swallow it."""


class Stop(BaseException):
    """Raised at the next test after a failure when the run stops at the first failing test."""


def describe(exc: BaseException | None) -> str:
    """One line for a test's failure: the exception type and message, cut to ERROR_CHARS."""
    if exc is None:
        return ""
    try:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except Exception:  # noqa: BLE001 - a candidate's exception whose __str__ raises
        text = type(exc).__name__
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + "..."


def verdict(exc: BaseException | None, cpu_s: float, limit_s: float) -> str:
    """AC, or why not: TLE (timer, or CPU past the limit), MLE, WA (an assertion), RE (anything else)."""
    if isinstance(exc, Timeout) or cpu_s > limit_s:
        return "TLE"
    if exc is None:
        return "AC"
    if isinstance(exc, MemoryError):
        return "MLE"
    if isinstance(exc, AssertionError):
        return "WA"
    return "RE"


def peak_memory_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Reporter:
    """Writes events to a duplicate of the original stdout, so the candidate redirecting sys.stdout
    (or closing fd 1) does not silence them."""

    def __init__(self, nonce: str) -> None:
        self._fd = os.dup(1)
        self._prefix = (MARK + nonce + " ").encode()

    def emit(self, **event) -> None:
        data = self._prefix + json.dumps(event).encode() + b"\n"
        while data:
            data = data[os.write(self._fd, data) :]


class Clock:
    """Per-test timers: CPU via SIGPROF, wall via SIGALRM; either raises Timeout in the test."""

    def __init__(self, cpu_s: float, wall_s: float) -> None:
        self.cpu_s, self.wall_s = cpu_s, wall_s
        self._cpu0 = self._wall0 = 0.0
        for signum in (signal.SIGPROF, signal.SIGALRM):
            signal.signal(signum, self._expired)

    def _expired(self, signum, frame) -> None:
        raise Timeout(f"over the time limit of {self.cpu_s:g}s")

    def arm(self) -> None:
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        signal.setitimer(signal.ITIMER_PROF, self.cpu_s)
        signal.setitimer(signal.ITIMER_REAL, self.wall_s)

    def disarm(self) -> tuple[float, float]:
        """(CPU seconds, wall seconds) since `arm`."""
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        return time.process_time() - self._cpu0, time.perf_counter() - self._wall0


class Units:
    """What the rewritten tests call around each test: ``if __m1_begin__(k): try: <test> except
    BaseException as e: __m1_end__(k, e) else: __m1_end__(k, None)``."""

    def __init__(self, reporter: Reporter, clock: Clock, skip: set, stop: bool) -> None:
        self.reporter, self.clock, self.skip, self.stop = reporter, clock, skip, stop
        self.failed = False

    def begin(self, key) -> bool:
        if self.stop and self.failed:
            raise Stop
        if key in self.skip:
            return False
        self.reporter.emit(start=key)
        self.clock.arm()
        return True

    def end(self, key, exc: BaseException | None) -> None:
        cpu, wall = self.clock.disarm()
        result = verdict(exc, cpu, self.clock.cpu_s)
        self.failed = self.failed or result != "AC"
        event = {"unit": key, "verdict": result, "time_s": round(wall, 4), "memory_mb": peak_memory_mb()}
        if result != "AC":
            event["error"] = describe(exc) or f"took {cpu:.3f}s of CPU"
        self.reporter.emit(**event)


def _finish(code: int = 0) -> None:
    """Exit now: no atexit handler or lingering thread of the candidate's can hold the run open."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the candidate may have closed or replaced it
            pass
    os._exit(code)


def _exec_file(name: str, namespace: dict) -> None:
    if os.path.exists(name):
        with open(name, encoding="utf-8") as fh:
            exec(compile(fh.read(), name, "exec"), namespace)


def run_asserts(spec: dict, reporter: Reporter, clock: Clock) -> None:
    """HumanEval and MBPP forms: prelude.py (test imports and setup), then the candidate, in one module
    named ``solution``; then tests.py, whose tests the host wrapped in begin/end calls."""
    module = types.ModuleType("solution")
    module.__file__ = os.path.abspath("solution.py")
    sys.modules["solution"] = module
    namespace = module.__dict__
    clock.arm()  # the candidate's module code gets one test's time
    try:
        _exec_file("prelude.py", namespace)
        _exec_file("solution.py", namespace)
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: exiting is not passing
        cpu, _ = clock.disarm()
        reporter.emit(load=verdict(exc, cpu, clock.cpu_s), error=describe(exc))
        return
    clock.disarm()
    units = Units(reporter, clock, set(spec["skip"]), spec["stop"])
    namespace.update(__m1_begin__=units.begin, __m1_end__=units.end)
    try:
        _exec_file("tests.py", namespace)
    except Stop:
        pass
    except BaseException as exc:  # noqa: BLE001
        reporter.emit(abort=describe(exc))


class PytestReport:
    """pytest plugin: the collected node ids, a start and a verdict per test, per-test timers around
    the test call, collection errors as a load failure, and the host's skip list deselected."""

    def __init__(self, spec: dict, reporter: Reporter, clock: Clock) -> None:
        import pytest

        self.reporter, self.clock, self.skip = reporter, clock, set(spec["skip"])
        self.outcome: dict[str, tuple[str, str, float]] = {}  # node id -> (verdict, error, seconds)
        self.cpu_used: dict[str, float] = {}  # node id -> CPU seconds of its test call

        # hookwrapper (not wrapper=True): the sandbox's pytest may be Debian's 7.x
        @pytest.hookimpl(hookwrapper=True)
        def pytest_collection(session):
            clock.arm()  # importing the tests imports the candidate: one test's time
            try:
                yield
            finally:
                clock.disarm()

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(item):
            clock.arm()
            try:
                yield
            finally:
                self.cpu_used[item.nodeid] = clock.disarm()[0]

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            self._record(item.nodeid, call, outcome.get_result())

        self.pytest_collection = pytest_collection
        self.pytest_runtest_call = pytest_runtest_call
        self.pytest_runtest_makereport = pytest_runtest_makereport

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            text = str(report.longrepr)
            result = "TLE" if Timeout.__name__ in text else "MLE" if "MemoryError" in text else "RE"
            lines = [line.removeprefix("E").strip() for line in text.splitlines() if line.strip()]
            self.reporter.emit(load=result, error=(lines[-1] if lines else text)[:ERROR_CHARS])

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        self.reporter.emit(collected=[item.nodeid for item in items])
        kept = [item for item in items if item.nodeid not in self.skip]
        removed = [item for item in items if item.nodeid in self.skip]
        if removed:
            config.hook.pytest_deselected(items=removed)
            items[:] = kept

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.reporter.emit(start=nodeid)

    def _record(self, nodeid: str, call, report) -> None:
        if self.outcome.get(nodeid, ("AC",))[0] != "AC":
            return  # the first failing phase decides
        cpu = self.cpu_used.pop(nodeid, 0.0) if call.when == "call" else 0.0
        if report.skipped:  # skipping is not passing: a candidate could call pytest.skip()
            result, error = "RE", f"skipped: {_skip_reason(report)}"
        else:
            exc = call.excinfo.value if report.failed and call.excinfo is not None else None
            result = verdict(exc, cpu, self.clock.cpu_s)
            if report.failed and result == "AC":
                result = "RE"  # failed without an exception of its own (e.g. a strict xfail that passed)
            if call.when != "call" and result == "WA":
                result = "RE"  # an assertion in a fixture is an error of the test, not a wrong answer
            error = describe(exc) or ("failed" if report.failed else f"took {cpu:.3f}s of CPU")
        seconds = self.outcome.get(nodeid, ("AC", "", 0.0))[2] + report.duration
        self.outcome[nodeid] = (result, "" if result == "AC" else error, seconds)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        result, error, seconds = self.outcome.pop(nodeid, ("RE", "no report", 0.0))
        event = {
            "unit": nodeid,
            "verdict": result,
            "time_s": round(seconds, 4),
            "memory_mb": peak_memory_mb(),
        }
        if result != "AC":
            event["error"] = error
        self.reporter.emit(**event)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr)[:ERROR_CHARS]


def run_pytest(spec: dict, reporter: Reporter, clock: Clock) -> int:
    """Pytest form: test_solution.py (``from solution import ...``) run by pytest, this plugin only."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # no system-wide plugin joins the run
    import pytest

    args = ["-q", "-s", "--tb=no", "--no-header", "-p", "no:cacheprovider", "-p", "no:stepwise"]
    args += ["-x"] if spec["stop"] else []
    return int(pytest.main([*args, "test_solution.py"], plugins=[PytestReport(spec, reporter, clock)]))


def main() -> None:
    spec = json.loads(sys.stdin.buffer.read())
    sys.stdin = open(os.devnull)  # the candidate's input() sees end of file
    reporter = Reporter(spec["nonce"])
    clock = Clock(spec["cpu_s"], spec["wall_s"])
    sys.dont_write_bytecode = True
    if spec["form"] == "pytest":
        _finish(run_pytest(spec, reporter, clock))
    run_asserts(spec, reporter, clock)
    _finish(0)
