"""The three rewards from what happened: repair (SWE-bench's grading of the test log), localisation (F1
of the named files and functions against the gold patch's) and test generation (SWT-bench's fail before
the fix, pass after it). Runs are sandboxes.swe_run.TestRun; nothing here starts a container."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from verifiers.base import Reward
from verifiers.format import final_section
from verifiers.swe.patch import repo_path
from verifiers.swe.task import GENERATED_TEST, SWETask

# -- test logs and grading (swebench) ------------------------------------------------------------------


def statuses(run) -> dict[str, str]:
    """Per-test statuses of a run's test output (pytest -rA), by swebench's pytest log parser."""
    from swebench.harness.log_parsers import PARSER_REGISTRY

    return PARSER_REGISTRY["parse_log_pytest"](run.test_output, None)


def grade(task: SWETask, run) -> tuple[bool, dict[str, Any]]:
    """(resolved, details) of a repair run, by SWE-bench's grading of the run's log."""
    from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS, EvalType, ResolvedStatus
    from swebench.harness.grading import get_eval_tests_report, get_logs_eval, get_resolution_status
    from swebench.types import TestSpec

    spec = TestSpec(
        instance_id=task.instance_id, image=task.image or "", eval_script_list=[], repo=task.repo,
        version="", FAIL_TO_PASS=task.FAIL_TO_PASS, PASS_TO_PASS=task.PASS_TO_PASS,
        log_parser="parse_log_pytest", eval_type=EvalType.PASS_AND_FAIL.value,
    )  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(run.log)
    try:
        status_map, valid = get_logs_eval(spec, fh.name)
    finally:
        os.unlink(fh.name)
    details: dict[str, Any] = {
        "tests": {
            "FAIL_TO_PASS": {t: status_map.get(t, "missing") for t in task.FAIL_TO_PASS},
            "PASS_TO_PASS": {t: status_map.get(t, "missing") for t in task.PASS_TO_PASS},
        }
    }
    if not valid:
        details["reason"] = "the test log is not usable: " + run.describe()
        return False, details
    report = get_eval_tests_report(
        status_map, {FAIL_TO_PASS: task.FAIL_TO_PASS, PASS_TO_PASS: task.PASS_TO_PASS}
    )
    resolved = get_resolution_status(report) == ResolvedStatus.FULL.value
    details["failed"] = report[FAIL_TO_PASS]["failure"] + report[PASS_TO_PASS]["failure"]
    if not resolved:
        details["reason"] = f"{len(details['failed'])} of {len(task.tests)} tests fail"
    return resolved, details


# -- localisation --------------------------------------------------------------------------------------

_LOCATION = re.compile(r"([\w./-]+\.py)(?:\s*(?:::|:|#)\s*([A-Za-z_][\w.]*))?")


def _norm_file(path: str) -> str:
    path = path.strip().strip("`'\"")
    for prefix in ("/testbed/", "./", "a/", "b/"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    return path


def locations_in(text: str) -> tuple[set[str], set[str]]:
    """(files, functions as ``file::name``) named in a response; ``Class.method`` counts as its
    method name, the way gold locations are recorded."""
    files: set[str] = set()
    functions: set[str] = set()
    for path, name in _LOCATION.findall(final_section(text)):
        path = _norm_file(path)
        files.add(path)
        if name:
            functions.add(f"{path}::{name.rsplit('.', 1)[-1]}")
    return files, functions


def gold_locations(task: SWETask) -> tuple[set[str], set[str]]:
    """Where the gold patch changes code: recorded at synthesis (``gold_locations``), else the patch's
    files and the functions its hunk headers name."""
    recorded = task.extra.get("gold_locations")
    if isinstance(recorded, str):
        recorded = json.loads(recorded)
    if isinstance(recorded, Mapping):
        return set(recorded.get("files", [])), set(recorded.get("functions", []))
    from unidiff import PatchSet

    files, functions = set(), set()
    for patched in PatchSet(task.patch):
        path = repo_path(patched.target_file) or repo_path(patched.source_file) or ""
        files.add(path)
        for hunk in patched:
            match = re.search(r"(?:def|class)\s+(\w+)", hunk.section_header or "")
            if match:
                functions.add(f"{path}::{match.group(1)}")
    return files, functions


def f1(predicted: set[str], gold: set[str]) -> float:
    hits = len(predicted & gold)
    if not hits:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(gold)
    return 2 * precision * recall / (precision + recall)


def localize_reward(task: SWETask, response: str) -> Reward:
    files, functions = locations_in(response)
    gold_files, gold_functions = gold_locations(task)
    file_f1 = f1(files, gold_files)
    details: dict[str, Any] = {
        "files": sorted(files), "functions": sorted(functions), "gold_files": sorted(gold_files),
        "gold_functions": sorted(gold_functions), "file_f1": file_f1,
    }  # fmt: skip
    if not files:
        details["reason"] = "the response names no file (expected path.py or path.py::function)"
    if not gold_functions:
        return Reward(file_f1, details)
    details["function_f1"] = f1(functions, gold_functions)
    return Reward((file_f1 + details["function_f1"]) / 2, details)


# What a container run means for a reward: functions of sandboxes.swe_run.TestRun, apart from the run.


def repair_reward(task: SWETask, touched: list[str], run) -> Reward:
    """The repair reward of a run of the task's tests on the patched code."""
    details: dict[str, Any] = {"files": touched, "run": run.result.describe()}
    if not run.applied:
        return Reward(
            0.0,
            {**details, "reason": "patch does not apply", "apply_error": run.apply_error, "resolved": False},
        )
    if run.limit:
        return Reward(0.0, {**details, "reason": run.describe(), "limit": run.limit, "resolved": False})
    resolved, graded = grade(task, run)
    return Reward(float(resolved), {**details, **graded, "resolved": resolved})


def generated_test_path(task: SWETask) -> str:
    """Where a generated test file goes: beside the first (in sorted order) FAIL_TO_PASS test's file."""
    from sandboxes.swe_run import files_of

    first = files_of(task.FAIL_TO_PASS)[:1] or ["tests/x"]
    return str(PurePosixPath(first[0]).parent / GENERATED_TEST)


def run_outcome(run) -> dict[str, Any]:
    """Exit code, per-test statuses and their failed / passed counts of one run of a generated test."""
    found = statuses(run)
    return {
        "exit_code": _exit_code(run), "statuses": found, "run": run.result.describe(),
        "failed": sum(s in ("FAILED", "ERROR") for s in found.values()),
        "passed": sum(s == "PASSED" for s in found.values()),
    }  # fmt: skip


def generated_tests_reward(runs: Mapping[str, Any], target: str) -> Reward:
    """The test-generation reward (SWT-bench: fail before the fix, pass after it) of the runs "before"
    (the buggy code) and "after" (the gold patch); a run stopped by a limit ends the judgement."""
    outcomes = {}
    for name, run in runs.items():
        if run.limit:
            return Reward(0.0, {**outcomes, "reason": f"{name}: {run.describe()}", "limit": run.limit})
        outcomes[name] = run_outcome(run)
    before, after = outcomes["before"], outcomes["after"]
    fails_before = before["exit_code"] == 1 and before["failed"] > 0
    passes_after = after["exit_code"] == 0 and after["passed"] > 0
    reason = None
    if not fails_before:
        reason = "the tests do not fail on the buggy code"
    elif not passes_after:
        reason = "the tests do not pass on the fixed code"
    details = {**outcomes, "path": target, **({"reason": reason} if reason else {})}
    return Reward(float(fails_before and passes_after), details)


def _exit_code(run) -> int | None:
    from swebench.harness.grading import parse_test_exit_code

    return parse_test_exit_code(run.log)
