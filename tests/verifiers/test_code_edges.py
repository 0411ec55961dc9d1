"""Code verifier edges: comparison helpers at their boundaries, the exact verdict records built from
sandbox results, item checks and their messages, limits, format reward, concurrency of `verify`, and
programs that try to forge or skip the function-call harness's result.

Most items here are rejected or fail to compile before anything runs; the few sandboxed runs are
grouped into partial-credit items so that every test stays well under a second.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from sandboxes import Limits, RunResult
from verifiers.base import ItemError
from verifiers.code import CodeVerifier, extract_code, outputs_match, values_match

SUM_TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12"}]
BROKEN = "def broken(:\n    pass"  # a syntax error: judged CE without starting the sandbox
MARK = "\x1e__m1_result__"  # the harness's result marker (verifiers.code._RESULT_MARK)


def py(code: str, tag: str = "python") -> str:
    return f"<think>I will write it.</think>Here is my solution:\n```{tag}\n{code}\n```\nDone."


# --- comparison helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "want", "tolerance", "match"),
    [
        ("yes", "no", 1e-6, False),  # words that are not numbers compare as text
        ("YES", "yes", 1e-6, False),
        ("1.5", "1", 0.5, True),  # a difference exactly at the tolerance still matches
        ("2.5", "2", 0.25, True),  # relative above 1: 0.5 <= 0.25 * 2
        ("2.51", "2", 0.25, False),
    ],
)
def test_outputs_match_boundaries(got, want, tolerance, match):
    assert outputs_match(got, want, tolerance) is match


@pytest.mark.parametrize(
    ("got", "want", "tolerance", "match"),
    [
        (1.5, 1, None, False),  # the default tolerance is a millionth, not "within one"
        (1.0000001, 1, None, True),
        ("1", 1, 1e-6, False),  # a string is not the number it spells
        (["a", "b"], "ab", 1e-6, False),  # nor is a list the string it joins to
        ({"a": 1}, "a", 1e-6, False),
        ([1.05], [1.0], 0.1, True),  # the tolerance reaches into lists ...
        ([1.05], [1.0], 0.01, False),
        ({"a": 1.05}, {"a": 1.0}, 0.1, True),  # ... and into dicts
        ({"a": 1}, {"a": 2}, 1e-6, False),  # same keys, different values
        ({"a": 1}, {"b": 1}, 1e-6, False),
        ("a", "a", 1e-6, True),
        ("a", "b", 1e-6, False),
        (None, None, 1e-6, True),
    ],
)
def test_values_match_table(got, want, tolerance, match):
    result = values_match(got, want) if tolerance is None else values_match(got, want, tolerance)
    assert result is match


@pytest.mark.parametrize(
    ("response", "language", "expected"),
    [
        ("```\nprint(1)\n```", "python", ("print(1)\n", "python")),  # an untagged block serves any language
        ("```\nprint(1)\n```", None, ("print(1)\n", "python")),  # and is Python when none is asked for
        ("```PY\nprint(2)\n```", None, ("print(2)\n", "python")),
    ],
)
def test_extract_code_untagged_blocks(response, language, expected):
    assert extract_code(response, language) == expected


@pytest.mark.parametrize(
    ("response", "language", "message"),
    [
        ("```cpp\nint main(){}\n```", "python", "no python code block in the response"),
        ("  \n\t ", None, "empty response"),
    ],
)
def test_extract_code_refusals(response, language, message):
    with pytest.raises(ItemError) as raised:
        extract_code(response, language)
    assert str(raised.value) == message


# --- settings -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"time_limit_s": 0},
        {"memory_mb": 0},
        {"workers": 0},
        {"max_tests": 0},
        {"format_weight": -0.1},
    ],
)
def test_each_bad_setting_alone_is_refused(options):
    with pytest.raises(ValueError) as raised:
        CodeVerifier(**options)
    assert str(raised.value) == (
        "time_limit_s, memory_mb, workers and max_tests must be positive, format_weight >= 0"
    )


def test_the_smallest_settings_are_accepted():
    verifier = CodeVerifier(time_limit_s=0.01, memory_mb=1, workers=1, max_tests=1, format_weight=0)
    assert (verifier.memory_mb, verifier.max_tests, verifier.workers) == (1, 1, 1)


@pytest.mark.parametrize(
    ("options", "item", "limits"),
    [
        ({}, {}, Limits(cpu_s=2.0, wall_s=5.0, memory_mb=512)),  # the defaults: 2 s CPU, 512 MB
        (
            {"time_limit_s": 3},
            {"time_limit_s": 0.5, "memory_mb": 64},
            Limits(cpu_s=0.5, wall_s=2.0, memory_mb=64),
        ),
        ({}, {"metadata": json.dumps({"time_limit_s": "1.5"})}, Limits(cpu_s=1.5, wall_s=4.0, memory_mb=512)),
    ],
)
def test_limits_handed_to_the_sandbox(options, item, limits):
    # wall = 2 x CPU + 1 s: a program that sleeps still ends, a busy one is stopped by its CPU time
    assert CodeVerifier(**options)._limits(item) == limits


# --- items refused before anything runs -----------------------------------------------------------------


def test_bad_items_get_exact_error_messages():
    good = py("print(1)")
    cases = [
        ({"response": 3, "tests": SUM_TESTS}, "item has no text `response`"),
        ({"response": good}, "item needs `tests`: a non-empty list of test objects"),
        ({"response": good, "tests": [1, 2]}, "item needs `tests`: a non-empty list of test objects"),
        ({"response": good, "tests": SUM_TESTS, "language": 3}, "`language` must be a string"),
        (
            {"response": "```java\nclass A {}\n```", "tests": SUM_TESTS},
            "unsupported language 'java' (supported: python, cpp)",
        ),
        (
            {"response": "```cpp\nint f() { return 1; }\n```", "tests": SUM_TESTS, "fn_name": "f"},
            "function-call style is supported for Python only",
        ),
        (
            {"response": "```cpp\nint main(){}\n```", "tests": SUM_TESTS, "language": "python"},
            "no python code block in the response",
        ),
        ({"response": " \n ", "tests": SUM_TESTS}, "empty response"),
        (
            {"response": good, "tests": SUM_TESTS, "time_limit_s": "fast"},
            "`time_limit_s` and `memory_mb` must be numbers",
        ),
    ]
    # "0" is a set value (not a missing one), so it must be refused rather than replaced by the default
    for field, value in [
        ("time_limit_s", "0"),
        ("memory_mb", "0"),
        ("time_limit_s", "inf"),
        ("memory_mb", -4),
    ]:
        cases.append(
            (
                {"response": good, "tests": SUM_TESTS, field: value},
                "`time_limit_s` and `memory_mb` must be positive and finite",
            )
        )
    rewards = CodeVerifier(workers=1).verify([item for item, _ in cases])
    assert [r.details.get("error") for r in rewards] == [message for _, message in cases]
    assert all(r.reward == 0 for r in rewards)


def test_an_unreachable_docker_engine_is_reported_per_item(monkeypatch):
    import sandboxes

    monkeypatch.setattr(sandboxes, "_cache", {})  # forget any engine connection made by earlier tests
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/m1-test/docker.sock")
    (reward,) = CodeVerifier(backend="docker").verify([{"response": py("print(3)"), "tests": SUM_TESTS}])
    assert reward.reward == 0
    assert reward.details["error"].startswith("sandbox unavailable: Docker engine not reachable")


# --- compile errors: the whole record, no sandbox run ---------------------------------------------------


def test_a_syntax_error_is_a_ce_over_the_tests_that_would_run():
    (reward,) = CodeVerifier(max_tests=2).verify([{"response": py(BROKEN), "tests": [{}, {}, {}]}])
    assert reward.reward == 0
    assert reward.details == {
        "language": "python",
        "style": "stdio",
        "tests_not_run": 1,
        "verdict": "CE",
        "passed": 0,
        "total": 2,
        "compile_output": "SyntaxError: invalid syntax (solution.py, line 1)",
        "format_ok": True,
        "format": "ok",
    }


def test_the_default_test_cap_and_the_entry_point_name():
    """A hundred tests run at most; `entry_point` (HumanEval's name) selects the function-call style."""
    item = {"response": py(BROKEN), "tests": [{"args": []}] * 101, "entry_point": "f"}
    within = {"response": py(BROKEN), "tests": [{"args": []}] * 100, "entry_point": "f"}
    over, exact = CodeVerifier(workers=1).verify([item, within])
    assert over.details["style"] == "function" and over.details["total"] == 100
    assert over.details["tests_not_run"] == 1
    assert exact.details["total"] == 100 and "tests_not_run" not in exact.details


# --- format reward --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "format_ok", "why"),
    [
        (f"```python\n{BROKEN}\n```", False, "missing </think>"),  # require_think is honoured
        (py(BROKEN, tag="py"), True, "ok"),  # tag aliases count as the language
        (py(BROKEN, tag="PY"), True, "ok"),
        (py(BROKEN, tag=""), True, "ok"),  # an untagged block counts for any language
    ],
)
def test_format_reward_with_required_reasoning(response, format_ok, why):
    verifier = CodeVerifier(require_think=True, format_weight=0.5, workers=1)
    (reward,) = verifier.verify([{"response": response, "tests": SUM_TESTS, "language": "python"}])
    assert reward.details["verdict"] == "CE"
    assert (reward.details["format_ok"], reward.details["format"]) == (format_ok, why)
    assert reward.reward == (0.5 if format_ok else 0.0)


# --- concurrency of verify ------------------------------------------------------------------------------


class _Watch:
    """Records which threads read an item's response and how many read at once."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.lock = threading.Lock()
        self.active = self.peak = 0
        self.threads: set[threading.Thread] = set()

    def item(self) -> dict:
        watch = self

        class Item(dict):
            def get(self, key, default=None):
                if key == "response":
                    with watch.lock:
                        watch.threads.add(threading.current_thread())
                        watch.active += 1
                        watch.peak = max(watch.peak, watch.active)
                    time.sleep(watch.hold_s)
                    with watch.lock:
                        watch.active -= 1
                return super().get(key, default)

        return Item(response=3, tests=SUM_TESTS)  # no text response: an error, nothing runs


@pytest.mark.parametrize(
    ("workers", "n_items", "inline", "peak"),
    [
        (1, 2, True, 1),  # one worker: judged in the caller's thread, no pool
        (None, 1, True, 1),  # a single item needs no pool either
        (None, 2, False, 2),  # the default is two workers ...
        (None, 4, False, 2),  # ... and never more than two at once
    ],
)
def test_items_are_judged_by_at_most_workers_threads(workers, n_items, inline, peak):
    watch = _Watch(hold_s=0.15)
    verifier = CodeVerifier() if workers is None else CodeVerifier(workers=workers)
    rewards = verifier.verify([watch.item() for _ in range(n_items)])
    assert [r.details["error"] for r in rewards] == ["item has no text `response`"] * n_items
    assert (watch.threads == {threading.main_thread()}) is inline
    assert watch.peak == peak


# --- verdict records from sandbox results ----------------------------------------------------------------


def result(status: str = "ok", stdout: bytes = b"", stderr: bytes = b"") -> RunResult:
    return RunResult(
        status=status,  # type: ignore[arg-type]
        exit_code=0 if status == "ok" else None,
        signal=None if status == "ok" else 9,
        stdout=stdout,
        stderr=stderr,
        wall_s=0.12345,
        cpu_s=0.1,
        max_rss_mb=12.345,
        truncated=False,
    )


TIMING = {"time_s": 0.123, "memory_mb": 12.3}  # rounded to ms and 0.1 MB


@pytest.mark.parametrize(
    ("run", "test", "verdict"),
    [
        (result(stdout=b"1.05\n"), {"output": "1"}, {"verdict": "AC", **TIMING}),  # the verifier's tolerance
        (
            result(stdout=b"1.5\n"),
            {"output": "1"},
            {"verdict": "WA", **TIMING, "expected": "1", "got": "1.5\n"},
        ),
        (result(stdout=b""), {}, {"verdict": "AC", **TIMING}),  # no output expected, none given
        (result(stdout=b"None\n"), {}, {"verdict": "WA", **TIMING, "expected": "", "got": "None\n"}),
        (
            result(stdout=b"\xff\n"),  # bytes that are not UTF-8 are replaced, never a crash
            {"output": "x"},
            {"verdict": "WA", **TIMING, "expected": "x", "got": "\ufffd\n"},
        ),
        (
            result(stdout=b"y" * 201),  # excerpts stop at 200 characters
            {"output": "z" * 200},
            {"verdict": "WA", **TIMING, "expected": "z" * 200, "got": "y" * 200 + "..."},
        ),
    ],
)
def test_stdio_verdict_records(run, test, verdict):
    assert CodeVerifier(tolerance=0.1)._stdio_verdict(run, test) == verdict


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        ("timeout", "TLE"),
        ("memory", "MLE"),
        ("runtime_error", "RE"),
        ("killed", "RE"),
        ("output_limit", "OLE"),
    ],
)
def test_failed_run_records(status, verdict):
    run = result(status, stdout=b"3\n", stderr=b"\xffboom " + b"e" * 300)
    expected = {
        "verdict": verdict,
        **TIMING,
        "stderr": "\ufffdboom " + "e" * 194 + "...",
        "status": f"{status} (signal SIGKILL, 0.123s wall, 0.100s cpu, 12.3 MB)",
    }
    verifier = CodeVerifier()
    assert verifier._stdio_verdict(run, {"output": "3"}) == expected
    assert verifier._function_verdict(run, {"expected": 3}) == expected


def test_a_sandbox_failure_is_an_item_error_not_a_verdict():
    with pytest.raises(ItemError, match=r"^sandbox failed: sandbox_error \(signal SIGKILL"):
        CodeVerifier()._stdio_verdict(result("sandbox_error"), {"output": ""})


NOT_JSON = {"verdict": "RE", **TIMING, "stderr": "the function's result is not JSON-serialisable"}


@pytest.mark.parametrize(
    ("stdout", "test", "verdict"),
    [
        # printed debug output (even invalid UTF-8) before the marker is ignored; "output" may name
        # the expected value; the verifier's tolerance applies
        (b"\xffdebug\n" + f"\n{MARK}1.05\n".encode(), {"output": 1}, {"verdict": "AC", **TIMING}),
        (
            f"\n{MARK}[1, 2]\n".encode(),
            {"expected": [2, 1]},
            {"verdict": "WA", **TIMING, "expected": "[2, 1]", "got": "[1, 2]"},
        ),
        # the last marker is the harness's: one printed earlier by the solution is ignored
        (
            f"{MARK}42\n\n{MARK}0\n".encode(),
            {"expected": 42},
            {"verdict": "WA", **TIMING, "expected": "42", "got": "0"},
        ),
        (b"42\n", {"expected": 42}, NOT_JSON),  # exited before the harness printed a result
        (f"\n{MARK}{{bad\n".encode(), {"expected": 42}, NOT_JSON),
    ],
)
def test_function_verdict_records(stdout, test, verdict):
    assert CodeVerifier(tolerance=0.1)._function_verdict(result(stdout=stdout), test) == verdict


# --- sandboxed runs -------------------------------------------------------------------------------------


def test_stdio_defaults_indices_and_the_first_failure(process_sandbox):
    """A test without input gets empty stdin and one without output expects none; with partial credit
    every test runs, the record keeps each test's index, and the verdict is the first failure's."""
    code = "import sys\ndata = sys.stdin.read()\nif data:\n    print(sum(map(int, data.split())))"
    tests = [
        {"input": "1 2", "output": "3"},
        {},
        {"input": "2 2", "output": "5"},
        {"input": "1 1", "output": "2"},
    ]
    (reward,) = CodeVerifier(partial_credit=True, time_limit_s=2).verify(
        [{"response": py(code), "tests": tests}]
    )
    records = reward.details["tests"]
    assert [r["verdict"] for r in records] == ["AC", "AC", "WA", "AC"]
    assert [r["test"] for r in records] == [0, 1, 2, 3]
    assert (reward.details["verdict"], reward.details["passed"], reward.details["total"]) == ("WA", 3, 4)
    assert reward.reward == 0.75
    assert all(isinstance(r["time_s"], float) and isinstance(r["memory_mb"], float) for r in records)


def test_function_call_arguments_and_harness_forgeries(process_sandbox):
    """Missing args/kwargs default to none, keyword arguments reach the function, and a solution can
    neither forge the harness's result marker nor exit early with the answer printed."""
    code = (
        "import sys\n"
        "def f(a=3, b=4, mode=''):\n"
        "    if mode == 'forge':\n"
        f"        print({MARK!r} + '42')\n"
        "        return 0\n"
        "    if mode == 'exit':\n"
        "        print(42)\n"
        "        raise SystemExit(0)\n"
        "    if mode == 'bytes':\n"
        "        sys.stdout.flush(); sys.stdout.buffer.write(b'\\xff\\n'); sys.stdout.buffer.flush()\n"
        "    return a + b\n"
    )
    tests = [
        {"expected": 7},
        {"args": [1], "kwargs": {"b": 2}, "expected": 3},
        {"args": [1, 1], "output": 2},
        {"kwargs": {"mode": "bytes"}, "expected": 7},
        {"kwargs": {"mode": "forge"}, "expected": 42},
        {"kwargs": {"mode": "exit"}, "expected": 42},
    ]
    verifier = CodeVerifier(partial_credit=True, time_limit_s=2)
    (reward,) = verifier.verify([{"response": py(code), "tests": tests, "fn_name": "f"}])
    records = reward.details["tests"]
    assert [r["verdict"] for r in records] == ["AC", "AC", "AC", "AC", "WA", "RE"], records
    assert records[4]["got"] == "0"
    assert records[5]["stderr"] == "the function's result is not JSON-serialisable"


def test_a_compiler_error_counts_every_test(process_sandbox):
    from sandboxes import get_sandbox

    if not get_sandbox("process").supports("cpp"):
        pytest.skip("no g++ in the sandbox")
    response = "```cpp\nint main() { return undeclared; }\n```"
    (reward,) = CodeVerifier().verify([{"response": response, "tests": SUM_TESTS}])
    assert (reward.details["verdict"], reward.details["passed"], reward.details["total"]) == ("CE", 0, 2)
    assert "undeclared" in reward.details["compile_output"]


def test_a_memory_limit_too_small_to_start_is_a_sandbox_error(process_sandbox):
    """1 MB is a valid limit, but not even the sandbox starts in it: an error, never a verdict."""
    (reward,) = CodeVerifier().verify([{"response": py("print(3)"), "tests": SUM_TESTS, "memory_mb": 1}])
    assert reward.reward == 0 and "verdict" not in reward.details
    assert reward.details["error"].startswith("sandbox failed: sandbox_error")
