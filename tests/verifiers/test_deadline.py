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
