"""SWE tasks as files (JSONL in SWE-bench's format) and as canonical RL items (domain "swe").

Each validated task becomes one item per kind (``repair``, ``localize``, ``testgen``), id
``<instance_id>:<kind>``. The prompt holds the problem statement and, for repair and test synthesis,
the code around the lines the gold patch changes (SWE-bench's "oracle" context); for localisation the
list of the library's modules instead. The task itself (all SWE-bench fields, ``python_packages``,
the instance image, the gold locations) goes into the item's metadata, so the ``swe`` verifier scores
a response from the item alone.

Not a flow: what the SWE flow (flows/swe/flow.py) writes, kept beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl

from flows.atomic import atomic_path
from flows.datasets import SWE, dataset_name
from flows.errors import InputError
from flows.jsonl import read_jsonl
from flows.schema import ITEM_COLUMNS, QUARANTINE_REASON, validate_items
from flows.store import DatasetStore, Manifest, StepCount
from flows.swe.repos import git
from verifiers.base import ItemError
from verifiers.swe import GENERATED_TEST, SWETask, gold_locations

CONTEXT_LINES = 40  # lines of code shown around each changed line
MAX_FILE_CHARS = 6000  # a file this short is shown whole


def read_tasks(path: Path) -> tuple[list[dict], list[dict]]:
    """(tasks, bad lines) of a JSONL file of SWE-bench instances; a bad line carries its reason."""
    if not Path(path).is_file():
        raise InputError(f"{path}: tasks file not found")
    rows, bad = [], []
    for line in read_jsonl(path):
        row = line.value
        try:
            if line.error is not None:
                raise ItemError(str(line.error))
            if not isinstance(row, dict):
                raise ItemError(f"expected a JSON object, got {type(row).__name__}")
            rows.append(SWETask.from_row(row).to_row())
        except ItemError as exc:
            instance_id = row.get("instance_id") if isinstance(row, dict) else None
            bad.append(
                {"line": line.number, "instance_id": instance_id, "reason": f"line {line.number}: {exc}"}
            )
    return rows, bad


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    n = 0
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            n += 1
    return n


def _changed_lines(task: SWETask) -> dict[str, list[int]]:
    """File -> line numbers (in the task's commit) that the gold patch changes."""
    # lazy: optional extra [swe] (unidiff)
    from unidiff import PatchSet

    out: dict[str, list[int]] = {}
    for patched in PatchSet(task.patch):
        path = patched.source_file[2:] if patched.source_file.startswith("a/") else patched.source_file
        lines = [ln.source_line_no for hunk in patched for ln in hunk if ln.is_removed and ln.source_line_no]
        lines = lines or [hunk.source_start for hunk in patched]
        out[path] = lines
    return out


def oracle_context(task: SWETask, repo_dir: Path) -> str:
    """The code the gold patch changes: whole files when short, else windows around the changes."""
    parts = []
    for path, lines in _changed_lines(task).items():
        try:
            text = git(repo_dir, "show", f"{task.base_commit}:{path}")
        except RuntimeError:
            continue
        if len(text) <= MAX_FILE_CHARS:
            parts.append(f"--- {path} ---\n{text}")
            continue
        source = text.splitlines()
        keep = sorted(
            {
                i
                for n in lines
                for i in range(max(1, n - CONTEXT_LINES), min(len(source), n + CONTEXT_LINES) + 1)
            }
        )
        shown, last = [], 0
        for n in keep:
            if n != last + 1:
                shown.append(f"... (lines {last + 1}-{n - 1} not shown)")
            shown.append(source[n - 1])
            last = n
        parts.append(f"--- {path} (excerpt) ---\n" + "\n".join(shown))
    return "\n\n".join(parts)


def module_list(task: SWETask, repo_dir: Path) -> str:
    files = git(repo_dir, "ls-tree", "-r", "--name-only", task.base_commit).splitlines()
    tests = {str(PurePosixPath(t.split("::")[0]).parent) for t in task.tests}
    modules = [f for f in files if f.endswith(".py") and not any(f.startswith(t + "/") for t in tests)]
    return "\n".join(modules)


def prompt(task: SWETask, kind: str, repo_dir: Path) -> str:
    head = f"Repository: {task.repo}\n\nIssue:\n{task.problem_statement.strip()}\n\n"
    if kind == "localize":
        return head + (
            f"Python modules of the repository:\n{module_list(task, repo_dir)}\n\n"
            "Which functions must change to fix the issue? Answer with one location per line, as "
            "path/to/module.py::function_name."
        )
    context = f"Code:\n{oracle_context(task, repo_dir)}\n\n"
    if kind == "testgen":
        target = str(
            PurePosixPath((task.FAIL_TO_PASS or ["tests/x"])[0].split("::")[0]).parent / GENERATED_TEST
        )
        return (
            head
            + context
            + (
                f"Write a pytest test module (it will be saved as {target}) that reproduces the issue: its "
                "tests must fail on the current code and pass once the bug is fixed. Answer with the module "
                "in a ```python code block."
            )
        )
    return (
        head
        + context
        + (
            "Fix the issue. Answer with a patch in unified diff format (as `git diff` prints it, paths "
            "relative to the repository root) in a ```diff code block. Do not change the tests."
        )
    )


def reference(task: SWETask, kind: str) -> str:
    if kind == "localize":
        files, functions = gold_locations(task)
        return json.dumps({"files": sorted(files), "functions": sorted(functions)})
    return task.patch


def to_items(rows: Sequence[dict], kinds: Sequence[str], repos_dir: Path) -> pl.DataFrame:
    """Canonical items (flows/schema.py) for each task and kind."""
    items = []
    for row in rows:
        task = SWETask.from_row(row)
        repo_dir = Path(repos_dir) / task.repo
        metadata = json.dumps(task.to_row(), ensure_ascii=False, default=str)
        for kind in kinds:
            items.append({
                "id": f"{task.instance_id}:{kind}",
                "source": f"swe:{task.repo}",
                "domain": "swe",
                "task": kind,
                "prompt": prompt(task, kind, repo_dir),
                "reference": reference(task, kind),
                "metadata": metadata,
            })  # fmt: skip
    return pl.DataFrame(items, schema=ITEM_COLUMNS)


def write_dataset(
    store: DatasetStore,
    run: str,
    kept: Sequence[dict],
    dropped: Sequence[tuple[str | None, dict, str]],
    *,
    kinds: Sequence[str],
    repos_dir: Path,
    steps: list[StepCount],
    params: dict[str, Any] | None = None,
) -> Manifest:
    """The dataset ``{run}-swe`` (its one writer: the SWE flow and `m1 swe validate --run`): the kept tasks
    as items, one per kind; in its quarantine the dropped tasks, as (instance id, task row, reason), and
    the items the schema refuses."""
    items, bad = validate_items(to_items(kept, kinds, repos_dir), where="swe items")
    quarantine = pl.DataFrame(
        [
            {"id": i, "metadata": json.dumps(row, default=str), QUARANTINE_REASON: why}
            for i, row, why in dropped
        ],
        schema={"id": pl.String, "metadata": pl.String, QUARANTINE_REASON: pl.String},
    )
    quarantine = pl.concat([quarantine, bad.select(quarantine.columns)], how="vertical_relaxed")
    return store.write(dataset_name(run, SWE), items, params=params, steps=steps, quarantine=quarantine)
