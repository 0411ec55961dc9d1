"""SWE verifier: rewards for repair, localisation and test synthesis on SWE-bench-style tasks.

A task has SWE-bench's instance fields (``instance_id, repo, base_commit, patch, test_patch,
FAIL_TO_PASS, PASS_TO_PASS, problem_statement``) plus ``python_packages`` (pip requirements of its
tests), at the top level of an item or inside its ``metadata``; the item's ``task`` says which reward:

- ``repair``: the response's unified diff (fenced or bare) is applied in the task's instance
  container and FAIL_TO_PASS + PASS_TO_PASS run; reward 1 only if all pass (SWE-bench's rules via
  `swebench.harness.grading`: a skipped test keeps a PASS_TO_PASS but does not fix a FAIL_TO_PASS;
  a log whose test command failed while reporting no failure is rejected). An empty, malformed,
  non-applying or out-of-repository diff scores 0 with the reason.
- ``localize``: the response names files and functions (``path.py::name``); reward is the F1 of those
  with the locations the gold patch touches, the mean of file F1 and function F1.
- ``testgen``: the response is a pytest file; reward 1 if it fails on the buggy code and passes once
  the gold patch is applied (SWT-bench's fail-to-pass criterion), with both runs in the details.

A run stopped by a limit scores 0 and names the limit (``details["limit"]``). Images come from
sandboxes/swe_images.py: the item's ``image`` when the engine has it, else built from the repository
under ``repos_dir`` (option; default ``$M1_SWE_REPOS`` or ``$M1_HOME/swe/repos``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from verifiers.base import ItemError, Reward
from verifiers.format import final_section

KINDS = ("repair", "localize", "testgen")
SWE_BENCH_FIELDS = (
    "instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS",
    "problem_statement",
)  # fmt: skip
DEFAULT_PACKAGES = ("pytest",)
# An item's own columns and the response: never part of the task it carries.
_ITEM_KEYS = ("id", "source", "domain", "task", "prompt", "reference", "metadata", "response")
GENERATED_TEST = "test_m1_generated.py"


# -- the task record ---------------------------------------------------------------------------------


def _str_list(value: Any, name: str) -> list[str]:
    """A list of strings from a list or a JSON-encoded list (SWE-bench's datasets store the latter)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise ItemError(f"`{name}` is a string but not a JSON list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ItemError(f"`{name}` must be a list of strings")
    return value


@dataclass
class SWETask:
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    problem_statement: str
    python_packages: list[str] = field(default_factory=lambda: list(DEFAULT_PACKAGES))
    test_cmd: str | None = None  # default: sandboxes.swe_run.DEFAULT_TEST_CMD
    image: str | None = None  # the instance image's tag, once built
    extra: dict[str, Any] = field(default_factory=dict)  # other fields, kept as they came

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SWETask:
        """A task from a SWE-bench JSONL row or an item (fields at the top level or in metadata)."""

        meta = row.get("metadata")
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError:
                raise ItemError("`metadata` is not valid JSON") from None
        fields = {
            **(meta if isinstance(meta, Mapping) else {}),
            **{k: v for k, v in row.items() if v is not None},
        }
        get = fields.get
        missing = [f for f in SWE_BENCH_FIELDS if f != "test_patch" and get(f) is None]
        if missing:
            raise ItemError(f"task is missing {', '.join(missing)}")
        for name in ("instance_id", "repo", "base_commit", "patch"):
            if not isinstance(get(name), str) or not get(name).strip():
                raise ItemError(f"`{name}` must be a non-empty string")
        repo = get("repo")
        if PurePosixPath(repo).is_absolute() or ".." in PurePosixPath(repo).parts:
            raise ItemError(f"`repo` must be a relative name like owner/name, got {repo!r}")
        packages = get("python_packages")
        known = {*SWE_BENCH_FIELDS, "python_packages", "test_cmd", "image", *_ITEM_KEYS}
        return cls(
            instance_id=get("instance_id"),
            repo=repo,
            base_commit=get("base_commit"),
            patch=get("patch"),
            test_patch=get("test_patch") or "",
            FAIL_TO_PASS=_str_list(get("FAIL_TO_PASS"), "FAIL_TO_PASS"),
            PASS_TO_PASS=_str_list(get("PASS_TO_PASS"), "PASS_TO_PASS"),
            problem_statement=str(get("problem_statement") or ""),
            python_packages=_str_list(packages, "python_packages") if packages is not None else list(DEFAULT_PACKAGES),
            test_cmd=get("test_cmd") or None,
            image=get("image") or None,
            extra={k: v for k, v in fields.items() if k not in known},
        )  # fmt: skip

    def to_row(self) -> dict[str, Any]:
        row = {k: v for k, v in asdict(self).items() if k != "extra"}
        row = {k: v for k, v in row.items() if v is not None}
        return {**row, **self.extra}

    @property
    def tests(self) -> list[str]:
        return [*self.FAIL_TO_PASS, *self.PASS_TO_PASS]

    def instance_spec(self, repos_dir: str | Path):
        from sandboxes.swe_images import InstanceSpec

        return InstanceSpec(
            self.instance_id, self.repo, Path(repos_dir) / self.repo, self.base_commit, self.test_patch,
            tuple(self.python_packages),
        )  # fmt: skip


def default_repos_dir() -> Path:
    if os.environ.get("M1_SWE_REPOS"):
        return Path(os.environ["M1_SWE_REPOS"])
    return Path(os.environ.get("M1_HOME", "./.m1")).resolve() / "swe" / "repos"


# -- patches -------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)```", re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- )", re.MULTILINE)


def extract_patch(response: str) -> str:
    """The unified diff in a response: the last ```diff/```patch block (or any block that is a diff),
    else the text from the first ``diff --git``/``---`` line on; '' when there is none."""
    text = final_section(response)
    blocks = _FENCE.findall(text)
    tagged = [body for tag, body in blocks if tag.lower() in ("diff", "patch", "udiff")]
    diffs = tagged or [body for _, body in blocks if _DIFF_START.search(body)]
    if diffs:
        return diffs[-1]
    match = _DIFF_START.search(text)
    return text[match.start() :] if match else ""


def _repo_path(name: str) -> str | None:
    """A diff header's path inside the repository (a/ b/ prefixes dropped); None for /dev/null."""
    name = name.strip().split("\t")[0]
    if name == "/dev/null":
        return None
    if name[:2] in ("a/", "b/"):
        name = name[2:]
    return name


def patch_files(patch: str) -> list[str]:
    """The repository paths a unified diff touches; ItemError (the reason) for an empty, malformed or
    out-of-repository diff."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    if not patch.strip():
        raise ItemError("empty patch")
    try:
        parsed = PatchSet(patch if patch.endswith("\n") else patch + "\n")
    except UnidiffParseError as exc:
        raise ItemError(f"malformed diff: {exc}") from None
    if not parsed:
        raise ItemError("malformed diff: no file changes found")
    files: list[str] = []
    for patched in parsed:
        # git apply takes such a change for one to `dev/null` inside the repository.
        if _repo_path(patched.source_file) is None and _repo_path(patched.target_file) is None:
            raise ItemError("malformed diff: /dev/null on both sides of a file change")
        for raw in (patched.source_file, patched.target_file):
            path = _repo_path(raw or "/dev/null")
            if path is None:
                continue
            parts = PurePosixPath(path).parts
            if not path or path.startswith("/") or ".." in parts or (parts and parts[0] == ".git"):
                raise ItemError(f"patch touches files outside the repository: {path}")
            if path not in files:
                files.append(path)
    return files


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
        path = _repo_path(patched.target_file) or _repo_path(patched.source_file) or ""
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


# -- running in the instance container -------------------------------------------------------------------


@dataclass
class SWEScorer:
    """Scores responses to tasks; the one implementation behind the verifier, `m1 swe evaluate` and
    the validation flow. Builds a missing instance image from `repos_dir`."""

    repos_dir: Path = field(default_factory=default_repos_dir)
    limits: Any = None  # sandboxes.Limits; default sandboxes.swe_run.SWE_LIMITS
    images: Any = None  # sandboxes.swe_images.SWEImages, created on first use

    def image(self, task: SWETask) -> str:
        from sandboxes.swe_images import SWEImageError, SWEImages

        if self.images is None:
            self.images = SWEImages()
        if task.image and self.images.exists(task.image):
            return task.image
        if not (Path(self.repos_dir) / task.repo / ".git").exists():
            missing = f"instance image {task.image} is not built and " if task.image else ""
            raise ItemError(f"{missing}repository {task.repo} not found under {self.repos_dir}")
        try:
            return self.images.instance(task.instance_spec(self.repos_dir)).tag
        except SWEImageError as exc:
            raise ItemError(str(exc)) from None

    def run(self, task: SWETask, files: Sequence[str], *, patch: str = "", extra=None):
        from sandboxes.swe_run import DEFAULT_TEST_CMD, SWE_LIMITS, run_tests

        return run_tests(
            self.image(task), files, patch=patch, extra=extra, test_cmd=task.test_cmd or DEFAULT_TEST_CMD,
            limits=self.limits or SWE_LIMITS, client=self.images.client,
        )  # fmt: skip

    def repair(self, task: SWETask, patch: str) -> Reward:
        """Reward 1 only if the patch applies and every FAIL_TO_PASS and PASS_TO_PASS test passes."""
        from sandboxes.swe_run import files_of

        try:
            touched = patch_files(patch)
        except ItemError as exc:
            return Reward(0.0, {"reason": str(exc), "resolved": False})
        return repair_reward(task, touched, self.run(task, files_of(task.tests), patch=patch))

    def testgen(self, task: SWETask, test_source: str) -> Reward:
        """Reward 1 if the test file fails on the buggy code and passes with the gold patch."""
        if not test_source.strip():
            return Reward(0.0, {"reason": "empty test file"})
        target = generated_test_path(task)
        runs = {}
        for name, patch in (("before", ""), ("after", task.patch)):
            runs[name] = run = self.run(task, [target], patch=patch, extra={target: test_source})
            if run.limit:
                break
        return generated_tests_reward(runs, target)


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


_PY_FENCE_TAGS = ("python", "py", "python3", "")


def extract_test_file(response: str) -> str:
    """The last Python code block of a response, else the response as a whole."""
    text = final_section(response)
    blocks = [body for tag, body in _FENCE.findall(text) if tag.lower() in _PY_FENCE_TAGS]
    return blocks[-1] if blocks else text


class SWEVerifier:
    """Verifier plugin ``swe``: items carry a task (see the module docstring) and ``response``."""

    name = "swe"
    version = "1"

    def __init__(self, repos_dir: str | None = None, workers: int = 2, wall_s: float | None = None) -> None:
        from dataclasses import replace

        from sandboxes.swe_run import SWE_LIMITS

        limits = replace(SWE_LIMITS, wall_s=wall_s) if wall_s else SWE_LIMITS
        self.scorer = SWEScorer(Path(repos_dir) if repos_dir else default_repos_dir(), limits)
        self.workers = workers

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        with ThreadPoolExecutor(max(1, self.workers)) as pool:
            return list(pool.map(self.score, items))

    def score(self, item: Mapping[str, Any]) -> Reward:
        try:
            task = SWETask.from_row(item)
            kind = item.get("task") or "repair"
            if kind not in KINDS:
                raise ItemError(f"unknown task {kind!r} (expected one of {', '.join(KINDS)})")
            response = item.get("response")
            if not isinstance(response, str):
                raise ItemError("item needs a `response` string")
            if kind == "localize":
                return localize_reward(task, response)
            if kind == "testgen":
                return self.scorer.testgen(task, extract_test_file(response))
            return self.scorer.repair(task, extract_patch(response))
        except ItemError as exc:
            return Reward.error(str(exc))
