"""Tests as programs for the code verifier: the HumanEval, MBPP and pytest forms of code benchmarks.

Fields are read from the item or from its ``metadata`` (curated items), so the public sets score as
they are published:

- **HumanEval** (``test`` defining ``check(candidate)``, ``entry_point``): the response's code runs,
  then ``check(<entry_point>)``. Each statement of ``check``'s body that checks (an ``assert``, a loop
  or block holding one, or a call of a helper of the test file that asserts, directly or through
  another) is a test of its own, together with the statements run since the previous test; a ``check``
  without one is a single test.
- **MBPP** (``test_list`` of assert lines; optional ``test_imports``, a list of import lines, and
  ``test_setup_code``): the imports and the setup run first, then the response's code, then each line
  of ``test_list`` as a test of its own.
- **pytest** (``test`` holding ``test_*`` functions, e.g. KodCode's ``from solution import f``): the
  response's code is ``solution.py``, the tests ``test_solution.py``, run by pytest inside the sandbox;
  each collected test (parametrised cases included) is a test of its own.

One sandbox run executes the candidate and the tests in one Python process, as the benchmarks' own
harnesses do (verifiers/code_harness.py runs inside it), with the same sandbox limits as stdin/stdout
tests for the whole run and a CPU and wall timer per test inside it. The HumanEval and MBPP tests are
rewritten here, on the host, so each one reports its own verdict (AC, WA for a failed assertion, RE,
TLE, MLE). A run that dies inside a test gives that test the run's verdict (TLE, MLE, RE, OLE); with
partial credit a new run resumes after it, so every test still gets a verdict of its own.

Like every in-process harness (HumanEval's, MBPP's, pytest), the tests trust the process they share
with the candidate: the sandbox bounds what the candidate can do to the machine, not to its own tests.
"""

from __future__ import annotations

import ast
import json
import secrets
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from sandboxes import Limits, RunResult, Sandbox, SandboxUnavailable
from verifiers.base import ItemError, item_field
from verifiers.code_harness import MARK

Form = Literal["humaneval", "mbpp", "pytest"]
STARTUP_CPU_S = 3.0  # the interpreter and (pytest form) pytest's own start, beyond the tests' time
TEST_FILE = "test_solution.py"
_MAIN = "import m1_harness\n\nm1_harness.main()\n"
_UNIT = (
    "if __m1_begin__({key!r}):\n"
    "    try:\n        pass\n"
    "    except BaseException as __m1_exc__:\n        __m1_end__({key!r}, __m1_exc__)\n"
    "    else:\n        __m1_end__({key!r}, None)\n"
)
_CODE_CHARS = 200
_AST_LOCK = threading.Lock()


@dataclass
class ProgramTests:
    """An item's tests in one of the program forms, ready to ship into the sandbox."""

    form: Form
    files: dict[str, str]  # beside solution.py: the tests (rewritten), the prelude
    labels: dict[Any, str] = field(default_factory=dict)  # test key -> its source (assert forms)
    static: list[str] = field(default_factory=list)  # pytest form: test names found in the source
    cases: int = 0  # pytest form: how many tests pytest will collect, as far as the source says

    @property
    def total(self) -> int:
        return len(self.labels) if self.form != "pytest" else len(self.static)


def program_tests(item: Mapping[str, Any]) -> ProgramTests | None:
    """The item's tests as programs, or None when it has none of these fields; ItemError when a field
    is there but malformed (the message names it)."""
    test_list = item_field(item, "test_list")
    if test_list is not None:
        return _mbpp(item, test_list)
    test = item_field(item, "test", decode=False)
    if test is None:
        return None
    if not isinstance(test, str) or not test.strip():
        raise ItemError("`test` must be a non-empty string of Python code")
    tree = _parse(test, "`test`")
    entry_point = item_field(item, "entry_point", decode=False)
    check = _function(tree, "check")
    if check is not None and entry_point is not None:
        return _humaneval(tree, check, entry_point)
    names, cases = _pytest_names(tree)
    if names:
        return ProgramTests("pytest", {TEST_FILE: test}, static=names, cases=cases)
    if check is not None:
        raise ItemError("`test` defines check(candidate) but the item has no `entry_point`")
    raise ItemError("`test` defines neither check(candidate) (with `entry_point`) nor test_* functions")


def _ast(source: str) -> ast.Module:
    """ast.parse, one thread at a time: CPython 3.11 keeps the AST converter's recursion depth in state
    its threads share, so two of the verifier's workers parsing at once can fail with "SystemError: AST
    constructor recursion depth mismatch" (seen here on 3.11.7 over HumanEval; CPython gh-106905)."""
    with _AST_LOCK:
        return ast.parse(source)


def _parse(source: str, what: str) -> ast.Module:
    try:
        return _ast(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ItemError(f"{what} is not valid Python: {type(exc).__name__}: {exc}") from None


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    return found[-1] if found else None  # the last definition is the one that runs


def _checks(node: ast.AST, asserting: set[str]) -> bool:
    """Whether a statement checks something when it runs: it asserts, or calls a function that does
    (`asserting`); functions, classes and lambdas it defines do not count (they run later, if at all)."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in asserting:
        return True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
        return False
    return any(_checks(child, asserting) for child in ast.iter_child_nodes(node))


def _asserting(tree: ast.Module, check: ast.FunctionDef) -> set[str]:
    """The functions of the test file (module-level or nested, `check` aside) that assert when called,
    directly or through another such function: a ``check`` that calls such a helper checks there."""
    defs = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n is not check
    ]
    found: set[str] = set()
    while more := {
        fn.name for fn in defs if fn.name not in found and any(_checks(s, found) for s in fn.body)
    }:
        found |= more
    return found


def _unit(key: Any, body: list[ast.stmt]) -> ast.stmt:
    """`body` wrapped so the harness times it and reports its verdict under `key`."""
    wrapper = _ast(_UNIT.format(key=key)).body[0]
    wrapper.body[0].body = body  # the try's body
    return wrapper


def _label(body: list[ast.stmt]) -> str:
    text = "\n".join(ast.unparse(stmt) for stmt in body)
    return text if len(text) <= _CODE_CHARS else text[:_CODE_CHARS] + "..."


def _humaneval(tree: ast.Module, check: ast.FunctionDef, entry_point: Any) -> ProgramTests:
    if not isinstance(entry_point, str) or not entry_point.isidentifier():
        raise ItemError(f"`entry_point` must be a function name, got {entry_point!r}")
    # Each statement that checks (asserts, or calls a helper that does) is a test, with the statements
    # run since the previous one (its setup: `x = candidate(3)`); statements after the last test belong
    # to it. So every statement that can fail the check fails a test: none runs outside one, where a
    # failure would have no test to count against. Function definitions stay where they are.
    asserting = _asserting(tree, check)
    labels: dict[Any, str] = {}
    groups: list[list[ast.stmt]] = []
    layout: list[ast.stmt | int] = []  # definitions, and the index of each test's group, in order
    pending: list[ast.stmt] = []
    for stmt in check.body:
        if _checks(stmt, asserting):
            groups.append([*pending, stmt])
            layout.append(len(groups) - 1)
            pending = []
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            layout.append(stmt)
        else:
            pending.append(stmt)
    if groups:
        groups[-1] += pending
        labels = {key: _label(group) for key, group in enumerate(groups)}
        check.body = [_unit(x, groups[x]) if isinstance(x, int) else x for x in layout]
    call = _ast(f"check({entry_point})").body
    if labels:
        tree.body += call
    else:  # asserts live elsewhere (a helper): the whole check is one test
        labels[0] = _label(call)
        tree.body.append(_unit(0, call))
    return ProgramTests("humaneval", {"tests.py": ast.unparse(ast.fix_missing_locations(tree))}, labels)


def _mbpp(item: Mapping[str, Any], test_list: Any) -> ProgramTests:
    if not isinstance(test_list, list) or not test_list or not all(isinstance(t, str) for t in test_list):
        raise ItemError("`test_list` must be a non-empty list of assert lines")
    imports = item_field(item, "test_imports") or []
    setup = item_field(item, "test_setup_code", decode=False) or ""
    if not isinstance(imports, list) or not all(isinstance(line, str) for line in imports):
        raise ItemError("`test_imports` must be a list of import lines")
    if not isinstance(setup, str):
        raise ItemError("`test_setup_code` must be a string of Python code")
    prelude = "\n".join([*imports, setup])
    _parse(prelude, "`test_imports` with `test_setup_code`")
    labels: dict[Any, str] = {}
    module = ast.Module(body=[], type_ignores=[])
    for index, line in enumerate(test_list):
        body = _parse(line, f"`test_list[{index}]`").body
        if not body:
            raise ItemError(f"`test_list[{index}]` is empty")
        labels[index] = _label(body)
        module.body.append(_unit(index, body))
    tests = ast.unparse(ast.fix_missing_locations(module))
    return ProgramTests("mbpp", {"prelude.py": prelude, "tests.py": tests}, labels)


def _pytest_names(tree: ast.Module) -> tuple[list[str], int]:
    """Test functions pytest would collect, by name, and how many cases they make (parametrised ones
    with literal argument lists counted case by case: the run's time budget grows with them)."""
    tests: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            tests.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            tests += [
                (f"{node.name}::{fn.name}", fn)
                for fn in node.body
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith("test")
            ]
    return [name for name, _ in tests], sum(_cases(fn) for _, fn in tests)


def _cases(fn: ast.AST) -> int:
    count = 1
    for deco in getattr(fn, "decorator_list", []):
        values = deco.args[1] if isinstance(deco, ast.Call) and len(deco.args) > 1 else None
        name = deco.func.attr if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) else ""
        if name == "parametrize" and isinstance(values, ast.List | ast.Tuple):
            count *= max(1, len(values.elts))
    return count


@cache
def _harness_source() -> str:
    return (Path(__file__).with_name("code_harness.py")).read_text(encoding="utf-8")


_pytest_ok: weakref.WeakKeyDictionary[Sandbox, bool] = weakref.WeakKeyDictionary()


def require_pytest(sandbox: Sandbox) -> None:
    """SandboxUnavailable (with the fix) unless the sandbox's python3 can import pytest; asked once."""
    if sandbox not in _pytest_ok:
        probe = sandbox.run(["python3", "-c", "import pytest"], limits=Limits(cpu_s=10, wall_s=30))
        _pytest_ok[sandbox] = probe.ok
    if not _pytest_ok[sandbox]:
        fix = (
            "bash scripts/sandbox-tools.sh" if sandbox.name == "process" else "bash scripts/docker-engine.sh"
        )
        raise SandboxUnavailable(f"pytest is not importable in the {sandbox.name} sandbox: run `{fix}`")


def events(stdout: bytes, nonce: str) -> list[dict[str, Any]]:
    """The harness's events in a run's output; anything else the candidate printed is ignored."""
    marker = (MARK + nonce + " ").encode()
    found = []
    for chunk in stdout.split(marker)[1:]:
        try:
            event = json.loads(chunk.split(b"\n", 1)[0])
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # cut short by the output limit
        if isinstance(event, dict):
            found.append(event)
    return found


def run_tests(
    sandbox: Sandbox,
    tests: ProgramTests,
    code: str,
    limits: Limits,
    partial_credit: bool,
    failed_run: Callable[[RunResult], dict[str, Any] | None],
) -> tuple[list[dict[str, Any]], int]:
    """(per-test results, total) for `code` against `tests`. `limits` are one test's; `failed_run`
    turns a run that did not end normally into a verdict (None when it ended normally).

    Without partial credit the run stops at the first failing test, as judges do."""
    files = {"solution.py": code, "m1_harness.py": _harness_source(), **tests.files}
    keys: list[Any] = list(tests.labels) if tests.form != "pytest" else []
    results: dict[Any, dict[str, Any]] = {}
    with sandbox.program("python", _MAIN, files=files) as program:
        while True:
            pending = len(keys) - len(results) if keys else max(tests.total, tests.cases)
            nonce = secrets.token_hex(8)
            spec = {
                "form": tests.form,
                "nonce": nonce,
                "cpu_s": limits.cpu_s,
                "wall_s": limits.wall_s,
                "skip": list(results),
                "stop": not partial_credit,
            }
            cpu = limits.cpu_s * (pending + 1) + STARTUP_CPU_S
            whole = Limits(cpu_s=cpu, wall_s=2 * cpu + 1, memory_mb=limits.memory_mb)
            run = program.run(stdin=json.dumps(spec).encode(), limits=whole)
            failure = failed_run(run)
            resume = _read_run(events(run.stdout, nonce), failure, keys, results, tests, not partial_credit)
            if not (resume and partial_credit and len(results) < len(keys)):
                break
    return _ordered(tests, keys, results)


def _read_run(
    found: list[dict[str, Any]],
    failure: dict[str, Any] | None,
    keys: list[Any],
    results: dict[Any, dict[str, Any]],
    tests: ProgramTests,
    stop: bool,
) -> bool:
    """Fold one run's events into `results`; True when the run died inside a test (resume after it).
    With `stop`, a run that stopped at a failing test leaves the tests after it without a verdict."""
    started = None
    for event in found:
        if "collected" in event and not keys:
            # only tests the test file defines: a candidate's test_* functions that a star import
            # brings in must not count
            keys += [key for key in event["collected"] if _name(key) in tests.static]
        elif "start" in event:
            started = event["start"]
        elif "unit" in event:
            results[event["unit"]] = {k: v for k, v in event.items() if k != "unit"}
            started = None
        elif "load" in event or "abort" in event:
            before = "load" in event
            verdict = event["load"] if before else "RE"
            why = event.get("error", "") if before else event["abort"]
            where = "before the tests" if before else "outside any test"
            for key in keys or tests.static:
                results.setdefault(key, {"verdict": verdict, "error": f"{where}: {why}"})
            return False
    if started is not None:  # the run died inside this test
        results[started] = failure or {"verdict": "RE", "error": "the program exited during this test"}
        return True
    if failure is None and not keys and tests.form == "pytest":
        failure = {"verdict": "RE", "error": "pytest collected no tests"}
    if not (stop and any(r["verdict"] != "AC" for r in results.values())):
        for key in keys or tests.static:
            results.setdefault(
                key, failure or {"verdict": "RE", "error": "the program ended before this test"}
            )
    return False


def _ordered(
    tests: ProgramTests, keys: list[Any], results: dict[Any, dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    ordered = []
    for key in [k for k in keys or tests.static if k in results]:
        result = {"test": key.removeprefix(TEST_FILE + "::") if isinstance(key, str) else key, **results[key]}
        if result["verdict"] != "AC" and key in tests.labels:
            result["code"] = tests.labels[key]
        ordered.append(result)
    total = len(keys) if keys else tests.total
    if tests.form == "pytest" and keys:  # a test in the source that pytest did not collect fails
        collected = {_name(key) for key in keys}
        for name in tests.static:
            if name not in collected:
                ordered.append({"test": name, "verdict": "RE", "error": "not collected by pytest"})
                total += 1
    return ordered, total


def _name(node_id: str) -> str:
    """A pytest node id's test name as the source spells it: ``TestX::test_y`` for
    ``test_solution.py::TestX::test_y[case-1]``."""
    return node_id.removeprefix(TEST_FILE + "::").split("[", 1)[0]
