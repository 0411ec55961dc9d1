"""Code verifier, tests as programs (HumanEval, MBPP, pytest forms): the rewriting and event reading on
their own, and every verdict produced for real by candidates run in the process sandbox (Docker: the
`docker`-marked tests at the end)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from sandboxes import RunResult, SandboxUnavailable
from verifiers import code_harness
from verifiers.code import CodeVerifier
from verifiers.code_programs import events, program_tests, require_pytest

HUMANEVAL = {
    "test": "METADATA = {'author': 'm1'}\n\n\ndef check(candidate):\n"
    "    assert candidate(1, 2) == 3\n"
    "    for a in range(3):\n        assert candidate(a, a) == 2 * a\n"
    "    assert candidate(-1, 1) == 0\n",
    "entry_point": "add",
}
MBPP = {
    "test_list": [
        "assert add(1, 2) == 3",
        "assert add(2, 5) == 7",
        "assert math.isclose(add(-0.5, 0.5), 0.0)",
    ],
    "test_imports": ["import math"],
    "test_setup_code": "",
}
PYTEST = {
    "test": "import pytest\nfrom solution import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n\n\n"
    "@pytest.mark.parametrize('a, b', [(2, 5), (0, 0)])\ndef test_param(a, b):\n    assert add(a, b) == a + b\n"
}
FORMS = {"humaneval": HUMANEVAL, "mbpp": MBPP, "pytest": PYTEST}
LABELS = {
    "humaneval": [0, 1, 2],
    "mbpp": [0, 1, 2],
    "pytest": ["test_small", "test_param[2-5]", "test_param[0-0]"],
}
# Each candidate misbehaves only when `a == 2`: in the second test of every form.
CANDIDATES = {
    "ok": ("return a + b", ["AC", "AC", "AC"]),
    "wrong": ("return a - b if a > 0 else a + b", ["WA", "WA", "AC"]),
    "raises": ("if a == 2:\n        raise KeyError(a)\n    return a + b", ["AC", "RE", "AC"]),
    "loops": ("while a == 2:\n        pass\n    return a + b", ["AC", "TLE", "AC"]),
    "sleeps": ("if a == 2:\n        time.sleep(30)\n    return a + b", ["AC", "TLE", "AC"]),
    "allocates": ("if a == 2:\n        bytearray(1 << 30)\n    return a + b", ["AC", "MLE", "AC"]),
    "exits": ("if a == 2:\n        os._exit(0)\n    return a + b", ["AC", "RE", "AC"]),  # a new run resumes
    "sys_exit": ("if a == 2:\n        sys.exit(0)\n    return a + b", ["AC", "RE", "AC"]),
    "crashes": ("if a == 2:\n        ctypes.string_at(0)\n    return a + b", ["AC", "RE", "AC"]),  # SIGSEGV
    "floods": ("if a == 2:\n        print('y' * (1 << 22))\n    return a + b", ["AC", "OLE", "AC"]),
}


@pytest.fixture(scope="module")
def sandboxed():
    from sandboxes import get_sandbox

    try:
        sandbox = get_sandbox("process")
        require_pytest(sandbox)
    except SandboxUnavailable as exc:
        pytest.skip(f"process sandbox unavailable: {exc}")
    return sandbox


def candidate(body: str, after: str = "") -> str:
    """A fenced response defining `add` with `body`, and `after` as module code after it."""
    return (
        f"```python\nimport ctypes, os, subprocess, sys, time\n\n\ndef add(a, b):\n    {body}\n{after}\n```"
    )


def score(item, **options):
    options = {"time_limit_s": 0.5, "memory_mb": 256, **options}
    (reward,) = CodeVerifier(**options).verify([item])
    return reward


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", CANDIDATES)
def test_a_verdict_per_test_with_partial_credit(sandboxed, form, name):
    body, verdicts = CANDIDATES[name]
    reward = score({"response": candidate(body), **FORMS[form]}, partial_credit=True)
    assert "error" not in reward.details, reward.details
    tests = reward.details["tests"]
    assert [t["test"] for t in tests] == LABELS[form]
    assert [t["verdict"] for t in tests] == verdicts, tests
    assert reward.details["style"] == form and reward.details["total"] == 3
    assert reward.reward == pytest.approx(verdicts.count("AC") / 3)
    first_failure = next((v for v in verdicts if v != "AC"), "AC")
    assert reward.details["verdict"] == first_failure


@pytest.mark.parametrize("form", FORMS)
def test_without_partial_credit_judging_stops_at_the_first_failure(sandboxed, form):
    reward = score({"response": candidate(CANDIDATES["raises"][0]), **FORMS[form]})
    assert reward.reward == 0.0 and reward.details["verdict"] == "RE"
    assert [t["verdict"] for t in reward.details["tests"]] == ["AC", "RE"]  # the third never ran
    assert reward.details["passed"] == 1 and reward.details["total"] == 3
    assert score({"response": candidate("return a + b"), **FORMS[form]}).reward == 1.0


def test_failures_say_which_assert_and_why(sandboxed):
    reward = score({"response": candidate("return a * b"), **MBPP}, partial_credit=True)
    first = reward.details["tests"][0]
    assert first == {**first, "verdict": "WA", "code": "assert add(1, 2) == 3", "error": "AssertionError"}
    pytest_reward = score({"response": candidate("return a * b"), **PYTEST}, partial_credit=True)
    assert "assert 2 == 3" in pytest_reward.details["tests"][0]["error"]  # pytest's own explanation


@pytest.mark.parametrize(
    ("form", "module_code", "verdict", "error"),
    [
        ("mbpp", "while True:\n    pass", "TLE", "Timeout"),
        ("humaneval", "n = int(input())", "RE", "EOFError"),  # nothing on stdin for the candidate
        ("pytest", "import sys\nsys.exit(0)", "RE", "SystemExit"),  # exiting is not passing
        ("humaneval", "import os\nos._exit(0)", "RE", "before this test"),
    ],
)
def test_a_candidate_failing_before_the_tests_fails_every_test(sandboxed, form, module_code, verdict, error):
    reward = score({"response": candidate("return a + b", module_code), **FORMS[form]})
    tests = reward.details["tests"]
    assert reward.reward == 0.0 and len(tests) == (2 if form == "pytest" else 3)  # pytest: names found
    assert all(t["verdict"] == verdict and error in t["error"] for t in tests), tests


def test_forged_results_and_stray_output_are_ignored(sandboxed):
    forged = json.dumps({"unit": 0, "verdict": "AC"})
    body = (
        f"print({code_harness.MARK!r} + '0123456789abcdef ' + {forged!r})\n"
        f"    print({code_harness.MARK!r}, end='')\n"
        "    sys.stdout.flush()\n"
        "    os._exit(0)"
    )
    reward = score({"response": candidate(body), **MBPP}, partial_credit=True)
    assert reward.reward == 0.0 and [t["verdict"] for t in reward.details["tests"]] == ["RE"] * 3
    chatty = candidate("print('a' * 5000, end='')\n    return a + b")
    assert score({"response": chatty, **HUMANEVAL}).reward == 1.0


def test_no_network_and_nothing_left_running(sandboxed):
    body = (
        "subprocess.Popen(['sleep', '987.654'], start_new_session=True)\n"
        "    import socket\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "    return a + b"
    )
    reward = score({"response": candidate(body), **MBPP}, partial_credit=True)
    assert [t["verdict"] for t in reward.details["tests"]] == ["RE"] * 3
    assert "OSError" in reward.details["tests"][0]["error"]  # no route out of the sandbox
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline_has(pid, b"987.654")]


def _cmdline_has(pid: str, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_fields_come_from_metadata_and_json_strings(sandboxed):
    response = candidate("return a + b")
    assert score({"response": response, "metadata": json.dumps(HUMANEVAL)}).reward == 1.0
    assert score({"response": response, "metadata": {"test": PYTEST["test"]}}).reward == 1.0
    as_text = {**MBPP, "test_list": json.dumps(MBPP["test_list"])}  # a Parquet/CSV column of JSON text
    assert score({"response": response, "metadata": json.dumps(as_text)}).reward == 1.0
    slow = candidate(
        "t0 = time.process_time()\n    while time.process_time() < t0 + 0.6:\n        pass\n    return a + b"
    )
    assert score({"response": slow, **MBPP}).details["verdict"] == "TLE"
    assert score({"response": slow, **MBPP, "metadata": json.dumps({"time_limit_s": 3})}).reward == 1.0


def test_stdin_tests_win_over_program_tests(sandboxed):
    item = {"response": "```python\nprint(sum(map(int, input().split())))\n```", **MBPP}
    reward = score({**item, "tests": [{"input": "1 2\n", "output": "3\n"}]})
    assert reward.reward == 1.0 and reward.details["style"] == "stdio"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"test_list": "assert f() == 1"}, "`test_list` is a string but not valid JSON"),
        ({"test_list": []}, "`test_list` must be a non-empty list"),
        ({"test_list": ["assert add(1, 2) ==="]}, "`test_list[0]` is not valid Python"),
        ({"test_list": ["assert 1"], "test_imports": "import math"}, "`test_imports` is a string"),
        ({"test_list": ["assert 1"], "test_setup_code": 3}, "`test_setup_code` must be a string"),
        ({"test": "def check(candidate):\n    assert candidate()"}, "has no `entry_point`"),
        ({"test": "x = 1", "entry_point": "add"}, "neither check(candidate)"),
        ({"test": "def check(candidate):\n    pass", "entry_point": "add(1)"}, "must be a function name"),
        ({"test": "def test_x(:\n    pass"}, "`test` is not valid Python"),
        ({"test": ["assert 1"]}, "`test` must be a non-empty string"),
        ({**MBPP, "language": "cpp"}, "mbpp-style tests are Python"),
    ],
)
def test_malformed_fields_are_named(fields, message):
    reward = score({"response": candidate("return a + b"), **fields})
    assert reward.reward == 0.0 and message in reward.details["error"], reward.details


def test_an_item_without_any_tests_says_what_it_needs():
    reward = score({"response": candidate("return a + b")})
    assert "item needs `tests`" in reward.details["error"]


def test_a_syntax_error_is_a_compile_error_of_every_test():
    reward = score({"response": "```python\ndef add(a, b:\n    return a\n```", **PYTEST})
    assert reward.details["verdict"] == "CE" and reward.details["total"] == 2
    assert reward.reward == 0.0 and "SyntaxError" in reward.details["compile_output"]


def test_humaneval_rewriting_makes_each_asserting_statement_a_test():
    tests = program_tests(HUMANEVAL)
    assert tests.form == "humaneval" and tests.labels == {
        0: "assert candidate(1, 2) == 3",
        1: "for a in range(3):\n    assert candidate(a, a) == 2 * a",
        2: "assert candidate(-1, 1) == 0",
    }
    module = ast.parse(tests.files["tests.py"])
    assert ast.unparse(module.body[-1]) == "check(add)" and "METADATA" in tests.files["tests.py"]
    helper = {
        "test": "def _ok(f):\n    assert f(1) == 1\n\ndef check(candidate):\n    _ok(candidate)",
        "entry_point": "f",
    }
    assert program_tests(helper).labels == {0: "_ok(candidate)"}  # the helper asserts: a test
    elsewhere = {
        "test": "import numpy as np\n\ndef check(candidate):\n    np.testing.assert_equal(candidate(1), 1)"
    }
    assert program_tests({**elsewhere, "entry_point": "f"}).labels == {0: "check(f)"}  # one test, whole


# check bodies whose checks live in helpers, nested definitions or statements around the asserts
SHAPES = {
    "nested helper": "def check(candidate):\n    def eq(a, b):\n        assert a == b\n"
    "    assert candidate(1, 2) == 3\n    eq(candidate(2, 2), 4)\n",
    "helper of a helper": "def _eq(a, b):\n    assert a == b\n\ndef _sum(f, a, b):\n    _eq(f(a, b), a + b)\n\n"
    "def check(candidate):\n    assert candidate(1, 2) == 3\n    _sum(candidate, 2, 2)\n",
    "setup before an assert": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
    "    x = candidate(2, 2)\n    assert x == 4\n",
    "statement after the last assert": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
    "    if candidate(2, 2) != 4:\n        raise ValueError('wrong')\n",
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_check_failing_in_a_helper_or_around_the_asserts_fails_a_test(sandboxed, shape):
    """A wrong solution that passes the first assert and fails a check made by a helper (nested, or a
    helper's helper) or by a statement outside the asserts never scores 1: every statement that can fail
    the check belongs to a test (an AssertionError outside any test was dropped, and scored 1)."""
    item = {"test": SHAPES[shape], "entry_point": "add"}
    tests = 1 if shape == "statement after the last assert" else 2  # it belongs to the last test
    assert len(program_tests(item).labels) == tests
    wrong = score({"response": candidate("return 3 if (a, b) == (1, 2) else 0"), **item})
    assert wrong.reward == 0.0 and wrong.details["total"] == tests, wrong.details
    assert wrong.details["passed"] == tests - 1, wrong.details
    right = score({"response": candidate("return a + b"), **item})
    assert right.reward == 1.0 and right.details["passed"] == tests, right.details


def test_mbpp_and_pytest_forms_are_read_as_published():
    mbpp = program_tests({**MBPP, "test_setup_code": "class Pair:\n    pass"})
    assert mbpp.form == "mbpp" and list(mbpp.labels) == [0, 1, 2]
    assert mbpp.files["prelude.py"] == "import math\nclass Pair:\n    pass"
    assert program_tests({"test_list": ["x = add(1, 2); assert x == 3"]}).labels == {
        0: "x = add(1, 2)\nassert x == 3"
    }
    source = (
        PYTEST["test"]
        + "\n\nclass TestMore:\n    def test_one(self):\n        pass\n    def helper(self):\n        pass\n"
    )
    kod = program_tests({"test": source})
    assert kod.form == "pytest" and kod.static == ["test_small", "test_param", "TestMore::test_one"]
    assert kod.cases == 4 and kod.total == 3  # parametrised cases count for the run's time budget
    assert program_tests({"response": "x"}) is None


def test_events_need_the_runs_nonce_and_a_whole_line():
    mark = code_harness.MARK
    out = (
        f'noise{mark}abc {{"start": 0}}\n{mark}abc {{"unit": 0, "verdict": "AC"}}\n'
        f'{mark}xyz {{"unit": 1, "verdict": "AC"}}\n{mark}abc [1]\n{mark}abc {{"unit": 1, "ver'
    ).encode()
    assert events(out, "abc") == [{"start": 0}, {"unit": 0, "verdict": "AC"}]


def test_harness_verdicts():
    assert code_harness.verdict(None, 0.1, 1.0) == "AC"
    assert code_harness.verdict(None, 1.5, 1.0) == "TLE"  # passed, but over its CPU time
    assert code_harness.verdict(code_harness.Timeout(), 0.0, 1.0) == "TLE"
    assert code_harness.verdict(MemoryError(), 0.0, 1.0) == "MLE"
    assert code_harness.verdict(AssertionError("x"), 0.0, 1.0) == "WA"
    assert code_harness.verdict(SystemExit(0), 0.0, 1.0) == "RE"
    assert code_harness.describe(ValueError("v" * 400)) == "ValueError: " + "v" * 288 + "..."
    assert code_harness.describe(AssertionError()) == "AssertionError"


def test_a_sandbox_without_pytest_is_reported_with_the_fix():
    class NoPytest:
        name = "process"
        asked = 0

        def run(self, argv, **kwargs):
            self.asked += 1
            return RunResult("runtime_error", 1, None, b"", b"ModuleNotFoundError", 0.1, 0.1, 10.0, False)

    sandbox = NoPytest()
    for _ in range(2):
        with pytest.raises(SandboxUnavailable, match="scripts/sandbox-tools.sh"):
            require_pytest(sandbox)
    assert sandbox.asked == 1  # asked once per sandbox


def test_a_test_pytest_does_not_collect_fails(sandboxed):
    source = "from solution import add\n\ndef test_a():\n    assert add(1, 2) == 3\n\ndef test_b():\n    pass\n\ntest_b = 5\n"
    reward = score({"response": candidate("return a + b"), "test": source}, partial_credit=True)
    assert [(t["test"], t["verdict"]) for t in reward.details["tests"]] == [
        ("test_a", "AC"),
        ("test_b", "RE"),
    ]
    assert reward.reward == 0.5 and reward.details["tests"][1]["error"] == "not collected by pytest"


@pytest.mark.docker
@pytest.mark.parametrize("name", ["ok", "wrong", "loops", "allocates", "exits"])
def test_docker_backend_gives_the_same_verdicts(name):
    from sandboxes import get_sandbox

    try:
        require_pytest(get_sandbox("docker"))
    except SandboxUnavailable as exc:
        pytest.skip(f"Docker engine unavailable: {exc}")
    body, verdicts = CANDIDATES[name]
    for form, fields in FORMS.items():
        reward = score({"response": candidate(body), **fields}, backend="docker", partial_credit=True)
        assert [t["verdict"] for t in reward.details.get("tests", [])] == verdicts, (form, reward.details)


def test_m1_verify_scores_curated_items_without_reshaping(sandboxed, tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    ok, wrong = candidate("return a + b"), candidate("pass")
    rows = [
        {"id": "he", "response": ok, "metadata": json.dumps({**HUMANEVAL, "source": "openai_humaneval"})},
        {"id": "mbpp", "response": wrong, **MBPP},
        {"id": "kod", "response": ok, "metadata": json.dumps(PYTEST)},
    ]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = CliRunner().invoke(app, ["verify", "--verifier", "code", "-i", str(source), "-o", str(target)])
    assert result.exit_code == 0, result.output
    scored = [json.loads(line) for line in target.read_text().splitlines()]
    assert [(r["id"], r["reward"], r["details"]["style"]) for r in scored] == [
        ("he", 1.0, "humaneval"),
        ("mbpp", 0.0, "mbpp"),
        ("kod", 1.0, "pytest"),
    ]


def test_a_candidates_own_test_functions_do_not_count(sandboxed):
    source = "from solution import *\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    hack = candidate(
        "return 0", after="def test_free():\n    pass\n\nclass TestFree:\n    def test_a(self):\n        pass"
    )
    reward = score({"response": hack, "test": source}, partial_credit=True)
    assert [(t["test"], t["verdict"]) for t in reward.details["tests"]] == [("test_add", "WA")]
    assert reward.reward == 0.0 and reward.details["total"] == 1
