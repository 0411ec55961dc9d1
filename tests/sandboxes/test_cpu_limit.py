"""A fractional CPU-time limit is kept exactly: 1.5 s is neither 1 s (truncated) nor 2 s (rounded up)."""

from __future__ import annotations

import pytest

from sandboxes import Limits
from sandboxes.classify import classify
from verifiers.code import CodeVerifier

# Burns `s` seconds of CPU time of its own (the interpreter's start adds a few hundredths).
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}:\n    pass\nprint('done')\n"
LIMIT = Limits(cpu_s=1.5, wall_s=30)  # a generous wall clock: the machine may be loaded


def test_a_run_under_a_fractional_limit_finishes(sandbox):
    r = sandbox.run(["python3", "main.py"], files={"main.py": BURN.format(s=1.2)}, limits=LIMIT)
    assert r.status == "ok" and r.stdout == b"done\n", r.describe()  # a 1 s limit would have killed it
    assert 1.2 <= r.cpu_s <= 1.5


def test_a_run_over_a_fractional_limit_is_a_timeout(sandbox):
    r = sandbox.run(["python3", "main.py"], files={"main.py": BURN.format(s=1.7)}, limits=LIMIT)
    assert r.status == "timeout", r.describe()  # a 2 s limit would have let it finish


@pytest.mark.parametrize(("cpu_s", "status"), [(1.0, "ok"), (1.4, "ok"), (1.6, "timeout"), (1.9, "timeout")])
def test_classify_compares_cpu_time_with_the_exact_limit(cpu_s, status):
    got = classify(
        limits=Limits(cpu_s=1.5),
        exit_code=0,
        signum=None,
        stderr=b"",
        cpu_s=cpu_s,
        max_rss_mb=10.0,
        wall_exceeded=False,
        output_exceeded=False,
    )
    assert got == status


def test_code_verifier_passes_a_fractional_time_limit_through():
    verifier = CodeVerifier(time_limit_s=2.5)
    assert verifier._limits({}).cpu_s == 2.5
    assert verifier._limits({"time_limit_s": 1.5}).cpu_s == 1.5
    assert verifier._limits({"metadata": '{"time_limit_s": 0.25}'}).cpu_s == 0.25
