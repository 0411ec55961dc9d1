"""What SWE task synthesis and validation decide from a run's test log, without Docker: the mutant's
outcome (`mutant_outcome` on the statuses of recorded pytest logs) and `validate_task` against a scorer
that replays recorded runs. The Docker tests (test_flow.py) prove the same decisions on real containers."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import pytest

from flows.swe.synthesize import baseline_passing, mutant_outcome
from flows.swe.validate import validate_task
from sandboxes import swe_run
from sandboxes.limits import RunResult
from verifiers.base import Reward
from verifiers.swe import statuses


def t(name: str) -> str:
    return f"tests/test_m.py::test_{name}"


def log_of(outcomes: dict[str, str]) -> str:
    """A pytest -rA short summary naming each test with its outcome (PASSED, FAILED, ERROR, ...)."""
    lines = [f"{status} {t(name)}" for name, status in outcomes.items()]
    return (
        textwrap.dedent("""\
        ============================= test session starts ==============================
        =========================== short test summary info ============================
    """)
        + "\n".join(lines)
        + "\n========== done in 0.01s ==========\n"
    )


def run_of(outcomes: dict[str, str], *, status: str = "ok", end: bool = True) -> swe_run.TestRun:
    """A run the way sandboxes/swe_run.py's script prints it around the test command."""
    log = f"{swe_run.APPLIED}\n{swe_run.START}\n{log_of(outcomes)}"
    if end:
        log += f"{swe_run.END}\n{swe_run.EXIT_CODE}: 1\n"
    result = RunResult(status, 0, None, log.encode(), b"", 1.5, 1.0, 50.0, False)
    return swe_run.TestRun(result, log, patch_given=False)


# -- synthesis: which mutants become tasks ------------------------------------------------------------

PASSING = [t(n) for n in ("a", "b", "c", "d")]


def found(**outcomes: str) -> dict[str, str]:
    return statuses(run_of({n: outcomes.get(n, "PASSED") for n in ("a", "b", "c", "d")}))


def test_the_baseline_is_the_passing_tests_only():
    baseline = statuses(run_of({"a": "PASSED", "b": "FAILED", "c": "SKIPPED", "d": "PASSED", "e": "ERROR"}))
    assert baseline_passing(baseline) == [t("a"), t("d")]


@pytest.mark.parametrize(
    ("outcomes", "f2p", "reason"),
    [
        ({}, [], "no test fails"),  # the mutant changes nothing the suite sees
        ({"b": "FAILED"}, [t("b")], None),
        ({"a": "ERROR", "c": "FAILED"}, [t("a"), t("c")], None),  # exactly half: kept
        ({"b": "SKIPPED"}, [t("b")], None),  # a baseline-passing test that no longer passes
        ({"a": "FAILED", "b": "FAILED", "c": "FAILED"}, [t("a"), t("b"), t("c")], "more than 50% of the tests fail"),
    ],
)  # fmt: skip
def test_a_mutant_is_kept_when_some_but_not_too_many_passing_tests_fail(outcomes, f2p, reason):
    assert mutant_outcome(PASSING, found(**outcomes), 0.5) == (f2p, reason)


def test_a_test_missing_from_the_mutants_log_counts_as_failing():
    log = statuses(run_of({"a": "PASSED", "b": "PASSED", "c": "PASSED"}))  # d never ran
    assert mutant_outcome(PASSING, log, 0.5) == ([t("d")], None)


def test_the_fail_fraction_is_of_the_baseline_passing_tests():
    one = found(a="FAILED")
    assert mutant_outcome(PASSING, one, 0.25) == ([t("a")], None)  # 1 of 4: at the limit
    assert mutant_outcome(PASSING, one, 0.2) == ([t("a")], "more than 20% of the tests fail")


# -- validation: which tasks are kept -----------------------------------------------------------------

F2P, P2P = ["fixed"], ["kept"]


@dataclass
class ReplayScorer:
    """An SWEScorer that answers with recorded runs: ``before`` for the tests at the task's commit,
    ``gold`` for the gold patch's repair reward."""

    repos_dir: str
    before: swe_run.TestRun
    gold: Reward = field(default_factory=lambda: Reward(1.0, {"resolved": True}))
    calls: list[str] = field(default_factory=list)

    def image(self, task):
        return "m1-swe-instance:replay"

    def run(self, task, files, extra=None):
        self.calls.append(f"run {files}")
        return self.before

    def repair(self, task, patch):
        self.calls.append("repair")
        return self.gold


ROW = {
    "instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": "diff", "test_patch": "",
    "FAIL_TO_PASS": [t(n) for n in F2P], "PASS_TO_PASS": [t(n) for n in P2P], "problem_statement": "p",
}  # fmt: skip


def check(tmp_path, before: swe_run.TestRun, gold: Reward | None = None, row: dict = ROW):
    scorer = ReplayScorer(str(tmp_path), before, *([gold] if gold else []))
    return validate_task(dict(row), scorer), scorer


def test_a_task_whose_tests_fail_before_and_pass_with_the_gold_patch_is_kept(tmp_path):
    v, scorer = check(tmp_path, run_of({"fixed": "FAILED", "kept": "PASSED"}))
    assert (v.kept, v.reason, v.instance_id) == (True, "", "o__r-1")
    assert v.row["image"] == "m1-swe-instance:replay"
    assert scorer.calls == ["run ['tests/test_m.py']", "repair"]


@pytest.mark.parametrize(
    ("before", "reason"),
    [
        ({"fixed": "PASSED", "kept": "PASSED"}, f"FAIL_TO_PASS passes before the gold patch: {t('fixed')}"),
        ({"fixed": "FAILED", "kept": "FAILED"}, f"PASS_TO_PASS fails before the gold patch: {t('kept')}"),
        ({"fixed": "FAILED"}, f"PASS_TO_PASS fails before the gold patch: {t('kept')}"),  # missing
        ({"fixed": "ERROR", "kept": "PASSED"}, ""),  # an error counts as failing
        ({"fixed": "SKIPPED", "kept": "PASSED"}, ""),  # ... and so does a skip (as in the gold grading)
        ({"fixed": "XFAIL", "kept": "PASSED"}, f"FAIL_TO_PASS passes before the gold patch: {t('fixed')}"),
        ({"fixed": "FAILED", "kept": "SKIPPED"}, ""),  # a skipped PASS_TO_PASS test is no regression
    ],
)
def test_the_run_before_the_gold_patch_decides_first(tmp_path, before, reason):
    v, scorer = check(tmp_path, run_of(before))
    assert (v.kept, v.reason) == (not reason, reason)
    assert ("repair" in scorer.calls) == (not reason)  # a task dropped before is not repaired


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("timeout", "before the gold patch: stopped by the timeout limit"),
        ("ok", "before the gold patch: the test run did not complete"),  # killed without a limit
    ],
)
def test_an_unfinished_run_before_the_gold_patch_drops_the_task(tmp_path, status, reason):
    v, scorer = check(tmp_path, run_of({"fixed": "FAILED", "kept": "PASSED"}, status=status, end=False))
    assert not v.kept and v.reason.startswith(reason)
    assert scorer.calls == ["run ['tests/test_m.py']"]


@pytest.mark.parametrize(
    ("gold", "reason"),
    [
        (Reward(0.0, {"reason": "1 of 2 tests fail", "failed": [t("fixed")]}),
         f"with the gold patch: 1 of 2 tests fail: {t('fixed')}"),
        (Reward(0.0, {"reason": "patch does not apply", "apply_error": "hunk #1 FAILED"}),
         "with the gold patch: hunk #1 FAILED"),
        (Reward(0.0, {}), "with the gold patch: not resolved"),
        (Reward(0.5, {}), "with the gold patch: not resolved"),  # only a full resolution keeps a task
    ],
)  # fmt: skip
def test_a_gold_patch_that_does_not_resolve_drops_the_task(tmp_path, gold, reason):
    v, _ = check(tmp_path, run_of({"fixed": "FAILED", "kept": "PASSED"}), gold)
    assert (v.kept, v.reason) == (False, reason)


def test_a_task_without_fail_to_pass_tests_is_dropped_before_any_run(tmp_path):
    v, scorer = check(tmp_path, run_of({}), row={**ROW, "FAIL_TO_PASS": []})
    assert (v.kept, v.reason, scorer.calls) == (False, "no FAIL_TO_PASS tests", [])
