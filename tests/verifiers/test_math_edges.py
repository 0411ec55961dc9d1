"""Math verifier edges: the process pool (when it is used, how many workers, recovery from a killed
worker, shutdown), the time bounds of the plain math-verify baseline, and the polynomial grammar of
the structured fast path (which exponents it reads and which answers it leaves to math-verify).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from verifiers.math import MathVerifier, fast_verdict, math_verify_equal, slow_verdict
from verifiers.math_fast import structured_verdict

ROOT = Path(__file__).resolve().parents[2]

# Pairs that no fast path decides, so math-verify runs (each in tens of milliseconds), with its verdict.
SLOW = [
    (r"2^{10}", "1024", True),
    (r"2^{10}", "1000", False),
    (r"\pi", r"\pi/1", True),
    (r"\pi", r"2\pi", False),
    (r"\frac{1}{2}", "2^{-1}", True),
    (r"\frac{1}{2}", "x", False),
    (r"\sqrt{2}", r"\frac{2}{\sqrt{2}}", True),
    (r"\sqrt{2}", "1.5", False),
    (r"\sqrt{2}", r"2^{1/2}", True),
    (r"\pi", "3.14", False),
]


def items(pairs):
    return [{"reference": gold, "response": f"\\boxed{{{answer}}}"} for gold, answer, _ in pairs]


def correct(rewards):
    return [r.details["correct"] for r in rewards]


def expected(pairs):
    return [equal for _, _, equal in pairs]


@pytest.fixture
def pool_pids():
    """The worker processes this test started (earlier tests may leave pools of their own alive)."""

    def children() -> set[int]:
        return {child.pid for child in multiprocessing.active_children()}

    before = children()
    return lambda: children() - before


def test_slow_pairs_are_left_to_math_verify():
    assert all(fast_verdict(gold, answer) is None for gold, answer, _ in SLOW)


def test_a_pool_of_one_worker_starts_at_two_slow_pairs_and_recovers_from_a_killed_worker(pool_pids):
    """Two slow pairs per worker are worth a pool; a worker killed from outside breaks the pool: that
    batch is verified in-process, and the next batch starts a fresh pool."""
    assert pool_pids() == set()
    verifier = MathVerifier(workers=1, format_weight=0)
    try:
        assert correct(verifier.verify(items(SLOW[:2]))) == expected(SLOW[:2])
        (pid,) = pool_pids()  # exactly `workers` processes, no more
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid in pool_pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert correct(verifier.verify(items(SLOW[2:4]))) == expected(SLOW[2:4])
        assert pool_pids() == set()  # the broken pool was shut down
        assert correct(verifier.verify(items(SLOW[4:6]))) == expected(SLOW[4:6])
        (fresh,) = pool_pids()
        assert fresh != pid
    finally:
        verifier.close()
    assert pool_pids() == set()  # close() stops the workers
    verifier.close()  # and closing twice is harmless


def test_a_pool_of_two_groups_pairs_by_reference(pool_pids):
    """Fewer than two slow pairs per worker stay in-process; more go to `workers` processes, one task
    per reference, and each verdict comes back to its own pair."""
    with MathVerifier(workers=2, format_weight=0) as verifier:
        assert correct(verifier.verify(items(SLOW[6:9]))) == expected(SLOW[6:9])
        assert pool_pids() == set()
        batch = SLOW[:6] + SLOW[9:]  # three references, seven pairs not in the cache
        assert correct(verifier.verify(items(batch))) == expected(batch)
        assert len(pool_pids()) == 2
    assert pool_pids() == set()


# A dozen nested parentheses or more: math-verify's ANTLR parse takes exponentially long
NESTED = "(" * 40 + "1" + ")" * 40  # ~4 s to parse here, so a 1 s bound must cut it


def timed_baseline(gold: str, answer: str) -> tuple[bool, float]:
    """`math_verify_equal` with a 1 s bound, and its seconds, in a fresh interpreter: math-verify's one
    alarm is lost when it fires inside a GC callback, and earlier tests leave some (dask's
    `GCDiagnosis` swallowed the timeout in one CI run; `verifiers.deadline` is our answer to that)."""
    code = (
        "import json, sys, time\n"
        "from verifiers.math import math_verify_equal\n"
        "start = time.monotonic()\n"
        "equal = math_verify_equal(sys.argv[1], sys.argv[2], timeout_s=1)\n"
        "print(json.dumps([equal, time.monotonic() - start]))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, gold, answer], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    equal, seconds = json.loads(run.stdout.splitlines()[-1])
    return equal, seconds


@pytest.mark.parametrize(("gold", "answer"), [(NESTED, "1"), ("1", NESTED)])
def test_math_verify_baseline_bounds_each_parse(gold, answer):
    equal, seconds = timed_baseline(gold, answer)
    assert equal is False
    assert seconds < 3.5  # the 1 s bound, not math-verify's default 5 s or none


def test_math_verify_baseline_bounds_the_comparison():
    equal, seconds = timed_baseline("5", "9^{9^{9}}")  # parses at once, compares forever
    assert equal is False
    assert seconds < 3.5


def test_slow_verdict_bounds_the_answer_parse_too():
    """The answer is parsed without math-verify's own alarm, which would replace the deadline's timer."""
    deeper = "(" * 40 + "3" + ")" * 40  # parses in ~4 s here; math-verify caches parses, so none shared
    start = time.monotonic()
    assert slow_verdict(("3", deeper), timeout_s=1) == (False, "math-verify timed out (>1s)")
    assert time.monotonic() - start < 3.5


def test_slow_verdict_off_the_main_thread_is_an_error_not_a_crash():
    got = []
    thread = threading.Thread(target=lambda: got.append(slow_verdict(("1", "1"), timeout_s=1)))
    thread.start()
    thread.join()
    assert got == [
        (
            False,
            "math-verify failed: RuntimeError: deadline() uses SIGALRM and works only in the main thread; "
            "run in a process pool",
        )
    ]


@pytest.mark.parametrize(
    ("gold", "answer", "verdict"),
    [
        # polynomials: signs, repeated terms, products, braced exponents up to 12
        ("-x^2+1", "1-x^2", True),
        ("+x^2+1", "x^2+1", True),
        ("2x", "x+x", True),
        ("x^2-1", "(x-1)(x+1)", True),
        ("2x+1", "1+2x", True),  # degree one is a polynomial too
        ("x^2+1", "x^{2}+1", True),
        ("x^{12}+1", "(x^{6})^{2}+1", True),
        ("x^{12}+1", "x^{12}+2", False),
        ("999999x+1", "999999x+1", True),
        # ... and what it leaves to math-verify
        ("x^{13}+1", "x^{13}+2", None),  # a power beyond 12
        ("1000000x+1", "1000000x+1", None),  # a coefficient of a million or more
        ("x-x", "2x-2x", None),  # degree 0: a number, not a polynomial
        ("3x^2", "x^23", None),  # x^23: two digits unbraced is ambiguous in LaTeX
        ("x+1", "x+", None),  # an empty term
        ("x+1", "(x+1 2", None),  # a group that is never closed
        ("x+1", "(x+1^", None),
        ("x^2", "x^", None),  # a missing exponent
        ("x^2", "x^{}", None),
        # sets of at least two distinct integers
        (r"\{1,2\}", r"\{2,1\}", True),
        (r"\{1,2,3\}", r"\{1,2\}", False),
        (r"\{1\}", r"\{2\}", None),
        (r"\{1,a\}", r"\{1,2\}", None),
        (r"\{1,1,2\}", r"\{1,2\}", None),
        # intervals with integer ends, the left one smaller
        ("(1,3)", "(1, 3)", True),
        ("[1,3)", "[1,3]", False),
        ("[1,3)", "[2,3)", False),
        ("[1,1]", "[1,1)", None),
    ],
)
def test_structured_fast_path_grammar(gold, answer, verdict):
    """What the structured fast path decides (always as math-verify would) and what it leaves alone."""
    assert structured_verdict(gold, answer) is verdict
    if verdict is not None:
        assert math_verify_equal(gold, answer) is verdict


# --- settings and the details of a reward ---------------------------------------------------------------


def test_setting_limits_are_inclusive_and_refusals_say_which():
    assert [MathVerifier(format_weight=w).format_weight for w in (0, 1)] == [0, 1]
    assert MathVerifier(max_answer_chars=1).max_answer_chars == 1
    with pytest.raises(ValueError) as weight:
        MathVerifier(format_weight=1.01)
    with pytest.raises(ValueError) as chars:
        MathVerifier(max_answer_chars=0)
    assert (str(weight.value), str(chars.value)) == (
        "format_weight must be in [0, 1]",
        "max_answer_chars must be >= 1",
    )


def test_by_default_nothing_runs_in_a_pool(pool_pids):
    verifier = MathVerifier()
    assert correct(verifier.verify(items(SLOW[:2]))) == expected(SLOW[:2])  # enough for a pool of one
    assert pool_pids() == set()


def test_a_fractional_timeout_rounds_up_to_whole_seconds():
    (reward,) = MathVerifier(timeout_s=0.5).verify([{"reference": "5", "response": r"\boxed{9^{9^{9}}}"}])
    assert reward.reward == 0 and reward.details["error"] == "math-verify timed out (>1s)"


@pytest.mark.parametrize(
    ("length", "options", "rejected"),
    [
        (200, {"max_answer_chars": 150}, "an answer of 200 characters (max_answer_chars=150)"),
        (201, {"max_answer_chars": 201}, None),
        (1001, {}, "an answer of 1001 characters (max_answer_chars=1000)"),  # the default limit
        (1000, {}, None),
    ],
)
def test_long_answers_are_excerpted_and_limited(length, options, rejected):
    answer = "1" * length  # a plain number math-verify reads at once (too many digits for a fast path)
    (reward,) = MathVerifier(**options).verify([{"reference": "42", "response": f"\\boxed{{{answer}}}"}])
    assert reward.reward == 0 and reward.details["correct"] is False
    assert reward.details["answer"] == (answer if length <= 200 else "1" * 200 + "...")
    assert reward.details.get("rejected") == rejected


def test_only_several_answers_are_reported_as_hedging():
    hedged, wrong = MathVerifier().verify(
        [
            {"reference": "42", "response": r"\boxed{41} or \boxed{42}"},
            {"reference": "42", "response": r"\boxed{41}"},
        ]
    )
    assert hedged.details["rejected"] == (
        "2 final answers (41 | 42), not all equal to the reference: a hedged response scores 0"
    )
    assert wrong.details["correct"] is False and "rejected" not in wrong.details
