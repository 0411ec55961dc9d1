"""SynLogic-style logic tasks: every module in ``verifiers/logic/tasks/`` that defines ``TASK`` is a task.

`TASKS` maps task name -> LogicTask. reasoning-gym's datasets join as ``rg_<name>`` tasks when that
package is installed (extra ``logic``); see `verifiers.logic.reasoning_gym_adapter`.

Adding a task: write ``tasks/<name>.py`` with a `LogicTask` subclass (base.py documents the contract) and
``TASK = MyTask()``. Grid puzzles can build on the shared pieces: `fill.FillInTask` (answers that are
completed number grids), `binary.MarkedCellsTask` (answers that mark cells), `solvers` (rules as CNF for
python-sat; clue reduction and uniqueness proofs), `grids` (grid and coordinate answers). Other answers
read through `textutil.scan`, the one strict grammar reader: layout is free, stray text is a parse error.
The contract tests in tests/logic/test_tasks.py and the fuzz contract in tests/logic/test_fuzz_contract.py
then cover the new task with no further code (a task accepting several answers adds a checker there).
"""

from __future__ import annotations

import importlib
import pkgutil

from verifiers.logic import tasks as _tasks_pkg
from verifiers.logic.base import LogicInstance, LogicTask, extract_answer


def _discover() -> tuple[dict[str, LogicTask], dict[str, str]]:
    """Import every task module. A module that fails to import is recorded in LOAD_ERRORS (and fails
    the task tests) instead of taking every other task down with it."""
    found: dict[str, LogicTask] = {}
    errors: dict[str, str] = {}
    for mod in sorted(pkgutil.iter_modules(_tasks_pkg.__path__), key=lambda m: m.name):
        try:
            module = importlib.import_module(f"{_tasks_pkg.__name__}.{mod.name}")
        except Exception as exc:  # noqa: BLE001 - reported through LOAD_ERRORS
            errors[mod.name] = f"{type(exc).__name__}: {exc}"
            continue
        task = getattr(module, "TASK", None)
        if not isinstance(task, LogicTask):
            continue
        if task.name in found:
            raise RuntimeError(f"two logic tasks named {task.name!r} ({mod.name} and another module)")
        found[task.name] = task
    return found, errors


TASKS, LOAD_ERRORS = _discover()


def get_task(name: str) -> LogicTask:
    """A built-in task, or a reasoning-gym dataset named ``rg_<dataset>`` when reasoning-gym is installed."""
    if name in TASKS:
        return TASKS[name]
    if name.startswith("rg_"):
        from verifiers.logic.reasoning_gym_adapter import reasoning_gym_task

        return reasoning_gym_task(name.removeprefix("rg_"))
    known = ", ".join(sorted(TASKS)) or "none"
    raise KeyError(f"unknown logic task {name!r} (known: {known}; reasoning-gym datasets as rg_<name>)")


__all__ = ["LOAD_ERRORS", "TASKS", "LogicInstance", "LogicTask", "extract_answer", "get_task"]
