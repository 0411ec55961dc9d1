"""The deadline that bounds math-verify: it must end work whose first timeout was swallowed (as Python
does when the alarm lands in a garbage-collector callback), and leave no alarm behind."""

import signal
import threading
import time

import pytest
from math_verify.errors import TimeoutException

from verifiers.deadline import deadline
from verifiers.math import slow_verdict


def test_a_swallowed_timeout_is_raised_again():
    swallowed = 0
    start = time.perf_counter()
    with pytest.raises(TimeoutException), deadline(0.2) as expiry:
        while True:
            try:
                while True:
                    pass
            except TimeoutException:
                swallowed += 1  # what "Exception ignored in <weakref callback>" amounts to
                if swallowed > 3:
                    raise
    assert expiry.fired and swallowed == 4
    assert time.perf_counter() - start < 5


def test_work_that_ends_in_time_is_untouched_and_no_alarm_is_left():
    before = signal.getsignal(signal.SIGALRM)
    with deadline(5) as expiry:
        total = sum(range(1000))
    assert total == 499500 and not expiry.fired
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


def test_only_the_main_thread_may_set_one():
    errors = []

    def run():
        try:
            with deadline(1):
                pass
        except RuntimeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert errors and "main thread" in errors[0]


def test_math_verify_on_a_tower_of_powers_ends_with_a_timeout_error():
    start = time.perf_counter()
    equal, error = slow_verdict(("42", "9^{9^{9^{9}}}"), timeout_s=1)
    assert equal is False and error is not None and "timed out" in error
    assert time.perf_counter() - start < 10
    assert slow_verdict(("\\frac{1}{2}", "0.5"), timeout_s=2) == (True, None)


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_timeout_landing_in_a_weakref_callback_stays_out_of_the_outer_unraisable_hook(monkeypatch):
    """The CI failure: the alarm lands in a weakref callback, Python hands the exception to
    sys.unraisablehook (pytest's), and the deadline ends the work on a later re-fire anyway."""
    import sys
    import weakref

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: seen.append(report.exc_type))
    hook = sys.unraisablehook

    class Thing:
        pass

    landed = []

    def callback(_ref):
        if landed:
            return  # from now on the loop itself takes the re-fire
        try:
            _spin(0.05)  # most of the loop's time: the alarm lands here
        except TimeoutException:
            landed.append(True)
            raise

    refs = []
    with pytest.raises(TimeoutException), deadline(0.1, retry_s=0.02):
        while True:
            thing = Thing()
            refs.append(weakref.ref(thing, callback))
            del thing  # the callback runs here, inside the interpreter's deallocation
    assert landed, "the alarm never landed in a callback: the test proves nothing"
    assert seen == [] and sys.unraisablehook is hook


def test_a_re_fire_never_lands_inside_the_previous_unraisable_hook(monkeypatch):
    import sys
    import weakref

    completed = []

    def slow_hook(report):
        if len(completed) < 5:
            _spin(0.05)  # several re-fire intervals: a raise here would break this hook
        completed.append(report.exc_type)

    monkeypatch.setattr(sys, "unraisablehook", slow_hook)

    class Thing:
        pass

    def failing(_ref):
        raise ValueError("not ours")

    refs = []
    with pytest.raises(TimeoutException), deadline(0.1, retry_s=0.01):
        while True:
            thing = Thing()
            refs.append(weakref.ref(thing, failing))
            del thing
    assert len(completed) >= 5 and set(completed) == {ValueError}
    assert sys.unraisablehook is slow_hook
