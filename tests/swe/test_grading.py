"""The SWE verifier's logic that needs no container: task records, patch and test-file extraction,
grading of real pytest logs by SWE-bench's rules, localisation rewards, and every item the verifier
settles before an instance image is needed (malformed items, unknown kinds, empty or unusable
patches, missing repositories)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from sandboxes import swe_run
from sandboxes.limits import RunResult
from sandboxes.swe_images import InstanceSpec, SWEImages
from tests.fakes.docker import FakeDocker
from verifiers.base import ItemError, Reward
from verifiers.swe import (
    SWEScorer,
    SWETask,
    SWEVerifier,
    default_repos_dir,
    extract_patch,
    extract_test_file,
    f1,
    generated_test_path,
    generated_tests_reward,
    gold_locations,
    grade,
    localize_reward,
    locations_in,
    patch_files,
    repair_reward,
    statuses,
)
from verifiers.swe.grading import _exit_code

DIFF = textwrap.dedent("""\
    diff --git a/src/m.py b/src/m.py
    --- a/src/m.py
    +++ b/src/m.py
    @@ -1,2 +1,2 @@ def f(x):
         y = x
    -    return x
    +    return x + 1
""")
ROW = {
    "instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": DIFF, "test_patch": "",
    "FAIL_TO_PASS": '["tests/test_m.py::test_fixed"]', "PASS_TO_PASS": '["tests/test_m.py::test_kept"]',
    "problem_statement": "f is off by one",
}  # fmt: skip


def offline_scorer(repos_dir: Path) -> SWEScorer:
    """A scorer whose engine fails the test at its first use: these paths are decided before it is needed."""
    return SWEScorer(repos_dir, images=SWEImages(client=FakeDocker(refuse=True)))


# -- the task record ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # SWE-bench's JSON-encoded lists, an empty string among them, and a task without a test patch.
        ({"PASS_TO_PASS": "", "test_patch": None}, {"PASS_TO_PASS": [], "test_patch": ""}),
        ({"PASS_TO_PASS": "  "}, {"PASS_TO_PASS": []}),
        ({"test_patch": "diff --git a/t b/t\n"}, {"test_patch": "diff --git a/t b/t\n"}),
        ({"problem_statement": ""}, {"problem_statement": ""}),
        ({"python_packages": '["pytest", "numpy"]'}, {"python_packages": ["pytest", "numpy"]}),
        # Run options are task fields, not leftovers in `extra`.
        ({"test_cmd": "pytest -x", "image": "m1-swe:abc"}, {"test_cmd": "pytest -x", "image": "m1-swe:abc"}),
        ({"test_cmd": "", "image": ""}, {"test_cmd": None, "image": None}),
    ],
)
def test_task_fields_are_read_with_their_defaults(change, expected):
    row = {k: v for k, v in {**ROW, **change}.items() if v is not None}
    task = SWETask.from_row(row)
    assert {k: getattr(task, k) for k in expected} == expected
    assert task.problem_statement == row["problem_statement"]
    assert task.extra == {}
    assert task.tests == ["tests/test_m.py::test_fixed", *task.PASS_TO_PASS]


def test_item_columns_stay_out_of_the_task_and_metadata_fills_the_gaps():
    item = {
        "id": "x:repair", "source": "s", "domain": "swe", "task": "repair", "prompt": "p", "reference": "r",
        "response": "r", "image": None, "metadata": {**ROW, "image": "m1-swe:abc", "version": "1.0"},
    }  # fmt: skip
    task = SWETask.from_row(item)
    assert task.image == "m1-swe:abc"  # a None column does not hide the metadata's value
    assert task.extra == {"version": "1.0"}
    row = task.to_row()
    assert "test_cmd" not in row and row["image"] == "m1-swe:abc" and row["version"] == "1.0"
    assert SWETask.from_row(row) == task


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metadata": "{not json"}, "`metadata` is not valid JSON"),
        ({"repo": None, "patch": None}, "task is missing repo, patch"),
        ({"instance_id": "  "}, "`instance_id` must be a non-empty string"),
        ({"base_commit": 5}, "`base_commit` must be a non-empty string"),
        ({"repo": "/etc"}, "`repo` must be a relative name like owner/name, got '/etc'"),
        ({"PASS_TO_PASS": "nope"}, "`PASS_TO_PASS` is a string but not a JSON list"),
        ({"PASS_TO_PASS": ["a", 1]}, "`PASS_TO_PASS` must be a list of strings"),
        ({"FAIL_TO_PASS": '{"a": 1}'}, "`FAIL_TO_PASS` must be a list of strings"),
    ],
)
def test_bad_task_rows_say_exactly_why(change, message):
    row = {k: v for k, v in {**ROW, **change}.items() if v is not None}
    with pytest.raises(ItemError) as info:
        SWETask.from_row(row)
    assert str(info.value) == message


def test_instance_spec_names_the_checkout_under_the_repositories_folder(tmp_path):
    task = SWETask.from_row({**ROW, "test_patch": "tp", "python_packages": ["pytest", "attrs"]})
    assert task.instance_spec(str(tmp_path)) == InstanceSpec(
        "o__r-1", "o/r", tmp_path / "o" / "r", "abc", "tp", ("pytest", "attrs")
    )


def test_repositories_folder_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("M1_SWE_REPOS", "/data/repos")
    assert default_repos_dir() == Path("/data/repos")
    monkeypatch.setenv("M1_SWE_REPOS", "")  # set but empty: not a choice
    monkeypatch.setenv("M1_HOME", "home")
    assert default_repos_dir() == tmp_path / "home" / "swe" / "repos"  # made absolute
    monkeypatch.delenv("M1_SWE_REPOS")
    monkeypatch.delenv("M1_HOME")
    assert default_repos_dir() == tmp_path / ".m1" / "swe" / "repos"


# -- patches and test files ------------------------------------------------------------------------


@pytest.mark.parametrize("tag", ["diff", "patch", "udiff", "DIFF"])
def test_a_tagged_diff_block_wins_over_later_untagged_diffs(tag):
    other = DIFF.replace("x + 1", "x - 1")
    response = f"Fix:\n```{tag}\n{DIFF}```\nAlternatively:\n```\n{other}```\n"
    assert extract_patch(response) == DIFF


@pytest.mark.parametrize(
    ("patch", "files"),
    [
        # A path with a space: only the tab before a timestamp ends a header's path.
        ("--- a/my notes.py\n+++ b/my notes.py\n@@ -1 +1 @@\n-a\n+b\n", ["my notes.py"]),
        ("--- a/x.py\t2024-01-01 10:00\n+++ b/x.py\t2024-01-01 10:00\n@@ -1 +1 @@\n-a\n+b\n", ["x.py"]),
        # The final newline is optional, even right after a header.
        ("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b", ["x.py"]),
        ("--- a/x.py\n+++ b/x.py", ["x.py"]),
        ("diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n",
         ["old.py", "new.py"]),
        ("--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", ["gone.py"]),
        ("diff --git a/e.py b/e.py\nnew file mode 100644\nindex 0000000..e69de29\n", ["e.py"]),
    ],
)  # fmt: skip
def test_patch_files_are_the_repository_paths_touched(patch, files):
    assert patch_files(patch) == files


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ("", "empty patch"),
        ("hello\n", "malformed diff: no file changes found"),
        # git apply would write such a change to `dev/null` inside the repository.
        (
            "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n",
            "malformed diff: /dev/null on both sides of a file change",
        ),
        # One context line short of its header: refused, not completed by the newline added at the end.
        (
            "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a\n+b\n",
            "malformed diff: Hunk is shorter than expected",
        ),
    ],
)
def test_unusable_patches_are_refused_with_the_exact_reason(patch, reason):
    with pytest.raises(ItemError) as info:
        patch_files(patch)
    assert str(info.value) == reason


@pytest.mark.parametrize(
    ("response", "source"),
    [
        ("<think>```python\ndef test_draft(): ...\n```</think>Here:\n```python\ndef test_a():\n    pass\n```",
         "def test_a():\n    pass\n"),
        ("```py\na = 1\n```\n```Python\nb = 2\n```\n```diff\n-x\n```\n```python3\nc = 3\n```\n```text\nd\n```",
         "c = 3\n"),
        ("```\nplain = 1\n```", "plain = 1\n"),
        ("def test_bare():\n    assert True\n", "def test_bare():\n    assert True\n"),
        ("Only a diff:\n```diff\n-x\n```", "Only a diff:\n```diff\n-x\n```"),
    ],
)  # fmt: skip
def test_test_file_is_the_last_python_block_else_the_whole_answer(response, source):
    assert extract_test_file(response) == source


# -- grading real pytest logs -------------------------------------------------------------------------

# The default test command (sandboxes.swe_run.DEFAULT_TEST_CMD) on a file with one test of each outcome.
OUTPUT = textwrap.dedent("""\
    ============================= test session starts ==============================
    collected 6 items

    tests/test_m.py ..FsEx                                                   [100%]

    ==================================== ERRORS ====================================
    _________________________ ERROR at setup of test_error _________________________

        @pytest.fixture
        def broken():
    >       raise RuntimeError("fixture broke")
    E       RuntimeError: fixture broke

    tests/test_m.py:6: RuntimeError
    =================================== FAILURES ===================================
    ___________________________________ test_bug ___________________________________

        def test_bug():
    >       assert 1 + 1 == 3
    E       assert (1 + 1) == 3

    tests/test_m.py:18: AssertionError
    ==================================== PASSES ====================================
    =========================== short test summary info ============================
    PASSED tests/test_m.py::test_fixed
    PASSED tests/test_m.py::test_kept
    SKIPPED tests/test_m.py::test_skipped - Skipped: not on this platform
    XFAIL tests/test_m.py::test_known - known
    ERROR tests/test_m.py::test_error - RuntimeError: fixture broke
    FAILED tests/test_m.py::test_bug - assert (1 + 1) == 3
    ========== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 error in 0.07s ==========
""")
# Without --no-fold-skipped (a task's own test_cmd may leave it out) pytest names the skip by file and
# line only.
FOLDED = OUTPUT.replace(
    "SKIPPED tests/test_m.py::test_skipped - Skipped: not on this platform",
    "SKIPPED [1] tests/test_m.py:21: not on this platform",
)
ALL_PASS = textwrap.dedent("""\
    ============================= test session starts ==============================
    collected 2 items

    tests/test_m.py ..                                                       [100%]

    ==================================== PASSES ====================================
    =========================== short test summary info ============================
    PASSED tests/test_m.py::test_fixed
    PASSED tests/test_m.py::test_kept
    ============================== 2 passed in 0.01s ===============================
""")


def t(name: str) -> str:
    return f"tests/test_m.py::test_{name}"


def run_of(output: str, exit_code: int | None, *, end: bool = True) -> swe_run.TestRun:
    """The container's log the way sandboxes/swe_run.py's script prints it around the test command."""
    log = f"{swe_run.APPLIED}\n{swe_run.START}\n{output}"
    if end:
        log += f"{swe_run.END}\n{swe_run.EXIT_CODE}: {exit_code}\n"
    result = RunResult("ok", 0, None, log.encode(), b"", 1.5, 1.0, 50.0, False)
    return swe_run.TestRun(result, log, patch_given=True)


def task_of(f2p: list[str], p2p: list[str]) -> SWETask:
    return SWETask.from_row({**ROW, "FAIL_TO_PASS": [t(n) for n in f2p], "PASS_TO_PASS": [t(n) for n in p2p]})


def test_statuses_and_exit_code_come_from_the_test_output():
    run = run_of(OUTPUT, 1)
    assert statuses(run) == {
        t("fixed"): "PASSED", t("kept"): "PASSED", t("skipped"): "SKIPPED", t("known"): "XFAIL",
        t("error"): "ERROR", t("bug"): "FAILED",
    }  # fmt: skip
    assert _exit_code(run) == 1
    assert _exit_code(run_of(ALL_PASS, 0)) == 0
    assert _exit_code(run_of(ALL_PASS, None, end=False)) is None


@pytest.mark.parametrize(
    ("f2p", "p2p", "resolved", "failed"),
    [
        (["fixed"], ["kept"], True, []),  # other failing tests of the file are not the task's
        (["fixed", "known"], ["kept"], True, []),  # an expected failure counts as a pass
        (["fixed"], ["kept", "skipped"], True, []),  # a skip keeps a PASS_TO_PASS test...
        (["skipped"], ["kept"], False, ["skipped"]),  # ...but does not fix a FAIL_TO_PASS one
        (["bug"], ["kept"], False, ["bug"]),
        (["fixed"], ["error"], False, ["error"]),
        (["fixed"], ["gone"], False, ["gone"]),  # a test the log never names failed
        (["bug", "fixed"], ["kept", "error"], False, ["bug", "error"]),
        (["fixed", "bug"], ["kept"], False, ["bug"]),  # a partial fix (SWE-bench's PARTIAL) is not resolved
    ],
)
def test_repair_is_resolved_only_when_every_task_test_passes(f2p, p2p, resolved, failed):
    task = task_of(f2p, p2p)
    found = statuses(run_of(OUTPUT, 1))
    ok, details = grade(task, run_of(OUTPUT, 1))
    assert ok is resolved
    expected = {
        "tests": {
            "FAIL_TO_PASS": {t(n): found.get(t(n), "missing") for n in f2p},
            "PASS_TO_PASS": {t(n): found.get(t(n), "missing") for n in p2p},
        },
        "failed": [t(n) for n in failed],
    }
    if not resolved:
        expected["reason"] = f"{len(failed)} of {len(f2p) + len(p2p)} tests fail"
    assert details == expected


def test_a_skip_the_log_does_not_name_counts_as_a_missing_test():
    ok, details = grade(task_of(["fixed"], ["skipped"]), run_of(FOLDED, 1))
    assert not ok
    assert details["tests"]["PASS_TO_PASS"] == {t("skipped"): "missing"}
    assert details["failed"] == [t("skipped")]


@pytest.mark.parametrize(
    ("run", "reason"),
    [
        # Exit 1 while every reported test passed: the log does not describe the run (e.g. a patch
        # printing its own PASSED lines).
        (run_of(ALL_PASS, 1), "completed"),
        (run_of(ALL_PASS, None, end=False), "the test run did not complete: ok (exit 0, 1.500s wall, 1.000s cpu, 50.0 MB)"),
    ],
)  # fmt: skip
def test_an_unusable_log_is_rejected_with_what_the_run_did(run, reason):
    ok, details = grade(task_of(["fixed"], ["kept"]), run)
    assert ok is False
    assert details == {
        "tests": {"FAIL_TO_PASS": {t("fixed"): "missing"}, "PASS_TO_PASS": {t("kept"): "missing"}},
        "reason": f"the test log is not usable: {reason}",
    }


def test_an_all_passing_log_with_exit_zero_resolves():
    assert grade(task_of(["fixed"], ["kept"]), run_of(ALL_PASS, 0)) == (
        True,
        {
            "tests": {"FAIL_TO_PASS": {t("fixed"): "PASSED"}, "PASS_TO_PASS": {t("kept"): "PASSED"}},
            "failed": [],
        },
    )


# -- rewards of container runs: what the scorer makes of the runs it started ----------------------------

OK = "ok (exit 0, 1.500s wall, 1.000s cpu, 50.0 MB)"


def stopped(status: str = "timeout") -> swe_run.TestRun:
    """A run a limit cut short: the log stops inside the test output."""
    log = f"{swe_run.APPLIED}\n{swe_run.START}\ntests/test_m.py .."
    return swe_run.TestRun(RunResult(status, None, 9, log.encode(), b"", 180.0, 3.0, 60.0, False), log, True)


def test_repair_reward_of_a_run_that_resolves_fails_or_never_applied():
    task = task_of(["fixed"], ["kept"])
    assert repair_reward(task, ["src/m.py"], run_of(ALL_PASS, 0)) == Reward(
        1.0,
        {
            "files": ["src/m.py"], "run": OK, "resolved": True, "failed": [],
            "tests": {"FAIL_TO_PASS": {t("fixed"): "PASSED"}, "PASS_TO_PASS": {t("kept"): "PASSED"}},
        },
    )  # fmt: skip
    failing = repair_reward(task_of(["bug"], ["kept"]), ["src/m.py"], run_of(OUTPUT, 1))
    assert failing.reward == 0.0 and failing.details["resolved"] is False
    assert failing.details["reason"] == "1 of 2 tests fail" and failing.details["failed"] == [t("bug")]
    log = f"error: patch failed: src/m.py:1\n{swe_run.APPLY_FAILED}\n"
    rejected = swe_run.TestRun(RunResult("ok", 91, None, log.encode(), b"", 0.2, 0.1, 9.0, False), log, True)
    assert repair_reward(task, ["src/m.py"], rejected) == Reward(
        0.0,
        {
            "files": ["src/m.py"], "run": "ok (exit 91, 0.200s wall, 0.100s cpu, 9.0 MB)",
            "reason": "patch does not apply", "apply_error": "error: patch failed: src/m.py:1",
            "resolved": False,
        },
    )  # fmt: skip


@pytest.mark.parametrize("status", ["timeout", "memory", "output_limit"])
def test_repair_reward_of_a_run_stopped_by_a_limit_names_the_limit(status):
    got = repair_reward(task_of(["fixed"], ["kept"]), ["src/m.py"], stopped(status))
    assert got.reward == 0.0 and got.details["limit"] == status and got.details["resolved"] is False
    assert got.details["reason"].startswith(f"stopped by the {status} limit ({status} (signal SIGKILL")
    assert "tests" not in got.details  # a cut-short log is not graded


def test_the_generated_test_file_sits_beside_a_fail_to_pass_test():
    assert generated_test_path(task_of(["fixed"], [])) == "tests/test_m1_generated.py"
    deep = SWETask.from_row(
        {**ROW, "FAIL_TO_PASS": ["pkg/tests/unit/test_z.py::T::test_a", "b/test_y.py::t"]}
    )
    assert generated_test_path(deep) == "b/test_m1_generated.py"  # the first file in sorted order
    assert generated_test_path(task_of([], ["kept"])) == "tests/test_m1_generated.py"  # no F2P: tests/


def outcome(output: str, code: int) -> dict:
    run = run_of(output, code)
    found = statuses(run)
    failed = sum(s in ("FAILED", "ERROR") for s in found.values())
    passed = sum(s == "PASSED" for s in found.values())
    return {"exit_code": code, "statuses": found, "run": OK, "failed": failed, "passed": passed}


FAILS = OUTPUT  # 1 failed, 1 error, 2 passed, exit 1
PATH = "tests/test_m1_generated.py"


@pytest.mark.parametrize(
    ("before", "after", "reward", "reason"),
    [
        ((FAILS, 1), (ALL_PASS, 0), 1.0, None),  # SWT-bench: fails on the bug, passes with the fix
        ((ALL_PASS, 0), (ALL_PASS, 0), 0.0, "the tests do not fail on the buggy code"),
        # exit 1 with no failing test named: the log does not show a failure of the generated tests
        ((ALL_PASS, 1), (ALL_PASS, 0), 0.0, "the tests do not fail on the buggy code"),
        # a collection error (exit 2) is not a failing test
        ((FAILS, 2), (ALL_PASS, 0), 0.0, "the tests do not fail on the buggy code"),
        ((FAILS, 1), (FAILS, 1), 0.0, "the tests do not pass on the fixed code"),
        ((FAILS, 1), (ALL_PASS, 1), 0.0, "the tests do not pass on the fixed code"),
        ((FAILS, 1), ("no tests ran in 0.01s\n", 0), 0.0, "the tests do not pass on the fixed code"),
    ],
)
def test_testgen_reward_needs_a_failure_before_and_a_pass_after_the_fix(before, after, reward, reason):
    got = generated_tests_reward({"before": run_of(*before), "after": run_of(*after)}, PATH)
    expected = {"before": outcome(*before), "after": outcome(*after), "path": PATH}
    assert got == Reward(reward, expected | ({"reason": reason} if reason else {}))


def test_testgen_reward_stops_at_the_run_a_limit_cut_short():
    got = generated_tests_reward({"before": stopped()}, PATH)
    assert got.reward == 0.0 and got.details["limit"] == "timeout" and "before" not in got.details
    assert got.details["reason"].startswith("before: stopped by the timeout limit")
    got = generated_tests_reward({"before": run_of(FAILS, 1), "after": stopped("memory")}, PATH)
    assert got.details["before"] == outcome(FAILS, 1) and got.details["limit"] == "memory"
    assert (
        got.details["reason"].startswith("after: stopped by the memory limit") and "after" not in got.details
    )


# -- localisation -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "files", "functions"),
    [
        ("/testbed/src/m.py::Outer.Inner.method", {"src/m.py"}, {"src/m.py::method"}),
        ("a/src/m.py:f", {"src/m.py"}, {"src/m.py::f"}),
        ("b/src/m.py # g", {"src/m.py"}, {"src/m.py::g"}),
        ("see `./pkg/x.py`", {"pkg/x.py"}, set()),
    ],
)
def test_locations_are_normalised_to_repository_paths_and_method_names(text, files, functions):
    assert locations_in(text) == (files, functions)


GOLD_PATCH = textwrap.dedent("""\
    --- a/gone.py
    +++ /dev/null
    @@ -1 +0,0 @@
    -x = 1
    --- a/old.py
    +++ b/new.py
    @@ -3,1 +3,1 @@ class Box:
    -a
    +b
    @@ -9,1 +9,1 @@
    -c
    +d
""")


@pytest.mark.parametrize(
    ("recorded", "files", "functions"),
    [
        # From the patch: a deleted file by its old path, a renamed one by its new path; hunk headers
        # name the functions (a hunk without one names none).
        (None, {"gone.py", "new.py"}, {"new.py::Box"}),
        ({"files": ["a.py"], "functions": ["a.py::f"]}, {"a.py"}, {"a.py::f"}),
        (json.dumps({"files": ["a.py"], "functions": ["a.py::f"]}), {"a.py"}, {"a.py::f"}),
        ({"files": ["a.py"]}, {"a.py"}, set()),
        ({"functions": ["a.py::f"]}, set(), {"a.py::f"}),
    ],
)
def test_gold_locations_are_the_recorded_ones_else_the_patchs(recorded, files, functions):
    row = {**ROW, "patch": GOLD_PATCH, **({"gold_locations": recorded} if recorded is not None else {})}
    assert gold_locations(SWETask.from_row(row)) == (files, functions)


@pytest.mark.parametrize(
    ("predicted", "gold", "score"),
    [
        ({"a"}, {"a"}, 1.0),
        ({"a"}, {"a", "b"}, 2 / 3),  # precision 1, recall 1/2
        ({"a", "b"}, {"a"}, 2 / 3),  # precision 1/2, recall 1
        ({"a", "b", "c"}, {"a", "b"}, 0.8),
        ({"x"}, {"a"}, 0.0),
        (set(), {"a"}, 0.0),
    ],
)
def test_f1(predicted, gold, score):
    assert f1(predicted, gold) == pytest.approx(score)


def test_localize_reward_details():
    row = {**ROW, "gold_locations": {"files": ["src/a.py", "src/b.py"], "functions": ["src/a.py::f"]}}
    reward = localize_reward(SWETask.from_row(row), "src/b.py::g and src/a.py::f")
    assert reward == Reward(
        (1.0 + 2 / 3) / 2,
        {
            "files": ["src/a.py", "src/b.py"], "functions": ["src/a.py::f", "src/b.py::g"],
            "gold_files": ["src/a.py", "src/b.py"], "gold_functions": ["src/a.py::f"],
            "file_f1": 1.0, "function_f1": 2 / 3,
        },
    )  # fmt: skip


@pytest.mark.parametrize(
    ("gold", "response", "reward", "function_f1"),
    [
        ({"files": ["src/a.py"], "functions": ["src/a.py::f"]}, "src/a.py::g", 0.5, 0.0),
        # Without gold functions the reward is the file F1 alone.
        ({"files": ["src/a.py"]}, "src/a.py::g and src/c.py", 2 / 3, None),
    ],
)
def test_localize_reward_averages_file_and_function_f1(gold, response, reward, function_f1):
    got = localize_reward(SWETask.from_row({**ROW, "gold_locations": gold}), response)
    assert got.reward == pytest.approx(reward)
    assert got.details["gold_files"] == gold["files"] and got.details.get("function_f1") == function_f1
    assert "reason" not in got.details


def test_a_response_naming_no_file_says_what_was_expected():
    got = localize_reward(SWETask.from_row(ROW), "the bug is in the parser")
    assert got.reward == 0.0
    assert got.details["reason"] == "the response names no file (expected path.py or path.py::function)"
    assert (got.details["files"], got.details["function_f1"]) == ([], 0.0)


# -- what the scorer and the verifier decide before any container --------------------------------------


def test_scorer_refuses_unusable_patches_and_empty_test_files(tmp_path):
    scorer, task = offline_scorer(tmp_path), SWETask.from_row(ROW)
    assert scorer.repair(task, "") == Reward(0.0, {"reason": "empty patch", "resolved": False})
    outside = "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"
    assert scorer.repair(task, outside) == Reward(
        0.0, {"reason": "patch touches files outside the repository: ../x", "resolved": False}
    )
    assert scorer.testgen(task, " \n") == Reward(0.0, {"reason": "empty test file"})


@pytest.mark.parametrize("f2p", [["tests/test_m.py::test_fixed"], []])
@pytest.mark.parametrize("checkout", ["absent", "not a git checkout"])
def test_scorer_names_a_missing_repository_before_using_the_engine(tmp_path, f2p, checkout):
    images = SWEImages(client=FakeDocker(refuse=True))
    scorer = SWEScorer(tmp_path, images=images)
    if checkout == "not a git checkout":
        (tmp_path / "o" / "r").mkdir(parents=True)
    task = SWETask.from_row({**ROW, "FAIL_TO_PASS": f2p})
    message = f"repository o/r not found under {tmp_path}"
    for score in (
        lambda: scorer.repair(task, DIFF),
        lambda: scorer.testgen(task, "def test_a():\n    pass\n"),
    ):
        with pytest.raises(ItemError) as info:
            score()
        assert str(info.value) == message
    assert scorer.images is images  # the given engine's images, not a new connection


def test_verifier_options_and_defaults(tmp_path):
    default = SWEVerifier()
    assert default.scorer.repos_dir == default_repos_dir()
    assert default.scorer.limits is swe_run.SWE_LIMITS
    assert default.workers == 2  # two instance containers at a time
    chosen = SWEVerifier(repos_dir=str(tmp_path), workers=3, wall_s=5)
    assert chosen.scorer.repos_dir == tmp_path
    assert chosen.scorer.limits == replace(swe_run.SWE_LIMITS, wall_s=5)
    assert chosen.workers == 3


@pytest.fixture
def verifier(tmp_path) -> SWEVerifier:
    verifier = SWEVerifier(repos_dir=str(tmp_path), workers=0)  # 0: still one worker
    verifier.scorer.images = SWEImages(client=FakeDocker(refuse=True))
    return verifier


LOCALIZE_ROW = {**ROW, "gold_locations": {"files": ["src/m.py"], "functions": ["src/m.py::f"]}}


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"task": "repair", "response": "ok"}, Reward.error("task is missing instance_id, repo, base_commit, patch, "
                                                            "FAIL_TO_PASS, PASS_TO_PASS, problem_statement")),
        ({**ROW, "task": "fix", "response": "r"},
         Reward.error("unknown task 'fix' (expected one of repair, localize, testgen)")),
        ({**ROW, "task": "repair"}, Reward.error("item needs a `response` string")),
        ({**ROW, "task": "localize", "response": ["src/m.py"]}, Reward.error("item needs a `response` string")),
        # No `task`: a repair. A response without a diff is an empty patch.
        ({**ROW, "response": "I would change f."}, Reward(0.0, {"reason": "empty patch", "resolved": False})),
        ({**ROW, "task": "repair", "response": "```diff\nhello\n```"},
         Reward(0.0, {"reason": "malformed diff: no file changes found", "resolved": False})),
        ({**ROW, "task": "repair", "response": f"```diff\n{DIFF}```"}, "missing"),
        ({**ROW, "task": "testgen", "response": "```python\n\n```"}, Reward(0.0, {"reason": "empty test file"})),
        ({**ROW, "task": "testgen", "response": "```python\ndef test_a():\n    pass\n```"}, "missing"),
        ({**LOCALIZE_ROW, "task": "localize", "response": "<think>src/x.py</think>src/m.py::f"}, 1.0),
    ],
)  # fmt: skip
def test_verifier_settles_items_that_need_no_container(verifier, tmp_path, item, expected):
    if expected == "missing":
        expected = Reward.error(f"repository o/r not found under {tmp_path}")
    got = verifier.score(item)
    if isinstance(expected, float):
        assert got.reward == expected and got.details["files"] == ["src/m.py"]
    else:
        assert got == expected


def test_verify_scores_every_item_in_order(verifier):
    items = [
        {**LOCALIZE_ROW, "task": "localize", "response": "src/m.py::f"},
        {**ROW, "task": "repair", "response": ""},
        {**LOCALIZE_ROW, "task": "localize", "response": "src/m.py::g"},
        {**ROW, "task": "nope", "response": ""},
    ]
    rewards = verifier.verify(items)
    assert [r.reward for r in rewards] == [1.0, 0.0, 0.5, 0.0]
    assert "resolved" in rewards[1].details and "error" in rewards[3].details
