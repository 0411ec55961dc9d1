"""SWE tasks as RL items and as the flow's report, without Docker: prompts (the oracle context around a
bug committed in a tiny library's repository, the module list, the generated test's path), references,
the `{run}-swe` dataset with its quarantine, and the markdown and table the flow publishes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore, StepCount
from flows.swe import flow as swe_flow
from flows.swe import items
from flows.swe.repos import git, make_repo
from flows.swe.synthesize import commit_bug
from tests.swe.minilib import LIBRARY, PROFILE, sdist
from verifiers.swe import SWETask

BIG = "src/mini/big.py"
BIG_TEXT = "".join(
    f'def f{i:03d}():\n    """Number {i}."""\n    return {i}\n\n' for i in range(1, 151)
)  # 600 lines


@pytest.fixture
def repo(tmp_path) -> Path:
    sdist(tmp_path / "cache", {BIG: BIG_TEXT, "README.md": "# mini\n"})
    return Path(make_repo(PROFILE, tmp_path / "repos", tmp_path / "cache")["path"])


def bug_task(repo: Path, changes: dict[str, tuple[str, str]], **fields) -> SWETask:
    """A task whose commit makes `changes` (file -> (old, new)) on the sdist commit, one commit per file."""
    base = git(repo, "rev-parse", "HEAD").strip()
    commit = base
    for path, (old, new) in changes.items():
        text = git(repo, "show", f"{commit}:{path}")
        assert old in text
        commit = commit_bug(repo, commit, path, text.replace(old, new, 1), "mini__t")
    patch = git(repo, "diff", "--no-color", "--no-ext-diff", commit, base)
    row = {
        "instance_id": "mini__t", "repo": "mini", "base_commit": commit, "patch": patch, "test_patch": "",
        "FAIL_TO_PASS": ["tests/span_test.py::test_span"], "PASS_TO_PASS": ["tests/test_calc.py::test_clamp_low"],
        "problem_statement": "  span is negative  \n", "created_from": base, **fields,
    }  # fmt: skip
    return SWETask.from_row(row)


def test_a_short_file_is_shown_whole(repo):
    task = bug_task(repo, {LIBRARY: ("high - low", "low - high")})
    assert items._changed_lines(task) == {LIBRARY: [14]}
    text = git(repo, "show", f"{task.base_commit}:{LIBRARY}")
    assert items.oracle_context(task, repo) == f"--- {LIBRARY} ---\n{text}"


def test_a_long_file_is_shown_around_each_change(repo):
    task = bug_task(repo, {BIG: ("return 50\n", "return 51\n"), LIBRARY: ("high - low", "low - high")})
    lines = git(repo, "show", f"{task.base_commit}:{BIG}").splitlines()
    changed = lines.index("    return 51") + 1  # line 199
    assert items._changed_lines(task)[BIG] == [changed]
    shown = "\n".join(lines[changed - 41 : changed + 40])
    expected_big = f"--- {BIG} (excerpt) ---\n... (lines 1-{changed - 41} not shown)\n{shown}"
    short = git(repo, "show", f"{task.base_commit}:{LIBRARY}")
    assert items.oracle_context(task, repo) == f"{expected_big}\n\n--- {LIBRARY} ---\n{short}"


def test_changes_far_apart_get_windows_with_the_gap_named(repo):
    base = git(repo, "rev-parse", "HEAD").strip()
    text = git(repo, "show", f"HEAD:{BIG}")
    bug = text.replace("return 5\n", "return 6\n", 1).replace("return 150\n", "return 151\n", 1)
    commit = commit_bug(repo, base, BIG, bug, "mini__two")
    patch = git(repo, "diff", "--no-color", "--no-ext-diff", commit, base)
    task = SWETask("mini__two", "mini", commit, patch, "", ["tests/span_test.py::test_span"], [], "p")
    lines = bug.splitlines()
    first, second = lines.index("    return 6") + 1, lines.index("    return 151") + 1  # 19 and 599 (of 600)
    assert items._changed_lines(task) == {BIG: [first, second]}
    expected = [f"--- {BIG} (excerpt) ---"]
    expected += [lines[n - 1] for n in range(1, first + 41)]
    expected += [f"... (lines {first + 41}-{second - 41} not shown)"]
    expected += [lines[n - 1] for n in range(second - 40, len(lines) + 1)]
    assert items.oracle_context(task, repo) == "\n".join(expected)


def test_a_hunk_that_only_adds_lines_points_at_its_start_and_a_missing_file_is_skipped(repo):
    base = git(repo, "rev-parse", "HEAD").strip()
    text = git(repo, "show", f"HEAD:{LIBRARY}")
    commit = commit_bug(repo, base, LIBRARY, text.replace("    return x\n", "    x = x\n    return x\n"), "a")
    patch = git(repo, "diff", "--no-color", "--no-ext-diff", commit, base)  # the fix removes a line only
    fix_adds = git(repo, "diff", "--no-color", "--no-ext-diff", base, commit)  # ... and this one adds it
    assert items._changed_lines(SWETask("a", "mini", commit, patch, "", ["t.py::t"], [], "p")) == {
        LIBRARY: [6]
    }
    adds = SWETask("a", "mini", base, fix_adds, "", ["t.py::t"], [], "p")
    assert items._changed_lines(adds) == {LIBRARY: [3]}  # the hunk's start, the context before the change
    gone = SWETask("a", "mini", base, fix_adds.replace(LIBRARY, "src/mini/gone.py"), "", ["t.py::t"], [], "p")
    assert items.oracle_context(gone, repo) == ""


def test_localisation_lists_the_modules_outside_the_tasks_test_folders(repo):
    task = bug_task(repo, {LIBRARY: ("high - low", "low - high")})
    assert items.module_list(task, repo).splitlines() == [
        "setup.py", "src/mini/__init__.py", BIG, LIBRARY, "src/mini/conftest.py", "src/mini/tests/test_inner.py",
    ]  # fmt: skip
    # a parametrised id may hold a slash: the folder is the file's
    inner = SWETask.from_row(
        {**task.to_row(), "PASS_TO_PASS": ["src/mini/tests/test_inner.py::test_inner[a/b]"]}
    )
    assert "src/mini/tests/test_inner.py" not in items.module_list(inner, repo)
    assert "tests/helpers.py" not in items.module_list(inner, repo)


def test_each_kind_has_its_own_prompt(repo):
    task = bug_task(repo, {LIBRARY: ("high - low", "low - high")})
    head = "Repository: mini\n\nIssue:\nspan is negative\n\n"
    localize = items.prompt(task, "localize", repo)
    assert localize == head + (
        f"Python modules of the repository:\n{items.module_list(task, repo)}\n\n"
        "Which functions must change to fix the issue? Answer with one location per line, as "
        "path/to/module.py::function_name."
    )
    code = f"Code:\n{items.oracle_context(task, repo)}\n\n"
    assert items.prompt(task, "repair", repo) == head + code + (
        "Fix the issue. Answer with a patch in unified diff format (as `git diff` prints it, paths "
        "relative to the repository root) in a ```diff code block. Do not change the tests."
    )
    assert items.prompt(task, "testgen", repo) == head + code + (
        "Write a pytest test module (it will be saved as tests/test_m1_generated.py) that reproduces the "
        "issue: its tests must fail on the current code and pass once the bug is fixed. Answer with the "
        "module in a ```python code block."
    )


@pytest.mark.parametrize(
    ("f2p", "target"),
    [
        (
            ["pkg/sub/test_a.py::TestA::test_x[p/q r]", "tests/test_b.py::test_y"],
            "pkg/sub/test_m1_generated.py",
        ),
        (["test_top.py::test_x"], "test_m1_generated.py"),
        ([], "tests/test_m1_generated.py"),
    ],
)
def test_the_generated_test_goes_beside_the_first_failing_test(repo, f2p, target):
    task = bug_task(repo, {LIBRARY: ("high - low", "low - high")})
    task.FAIL_TO_PASS = f2p
    assert f"(it will be saved as {target})" in items.prompt(task, "testgen", repo)


def test_items_carry_the_task_and_their_reference(repo):
    task = bug_task(repo, {LIBRARY: ("high - low", "low - high")}, gold_locations={"files": [LIBRARY],
                    "functions": [f"{LIBRARY}::span"]})  # fmt: skip
    df = items.to_items([task.to_row()], ["repair", "localize", "testgen"], repo.parent)
    assert df.schema == pl.Schema(ITEM_COLUMNS)
    rows = df.to_dicts()
    assert [r["id"] for r in rows] == ["mini__t:repair", "mini__t:localize", "mini__t:testgen"]
    assert {(r["source"], r["domain"]) for r in rows} == {("swe:mini", "swe")}
    assert [r["task"] for r in rows] == ["repair", "localize", "testgen"]
    assert [r["prompt"] for r in rows] == [
        items.prompt(task, k, repo) for k in ("repair", "localize", "testgen")
    ]
    assert rows[0]["reference"] == rows[2]["reference"] == task.patch
    assert json.loads(rows[1]["reference"]) == {"files": [LIBRARY], "functions": [f"{LIBRARY}::span"]}
    assert all(SWETask.from_row(json.loads(r["metadata"])) == task for r in rows)
    empty = items.to_items([], ["repair"], repo.parent)
    assert empty.height == 0 and empty.schema == pl.Schema(ITEM_COLUMNS)


def test_the_dataset_holds_the_kept_tasks_and_quarantines_the_dropped(repo, tmp_path):
    task = bug_task(repo, {LIBRARY: ("high - low", "low - high")})
    store = DatasetStore(tmp_path / "home")
    dropped = SWETask.from_row({**task.to_row(), "instance_id": "mini__d"}).to_row()
    steps = [StepCount("synthesize", 5, 2, "why"), StepCount("validate", 2, 1, "how")]
    manifest = items.write_dataset(
        store, "r1", [task.to_row()], [("mini__d", dropped, "FAIL_TO_PASS passes before the gold patch: x")],
        kinds=["repair", "localize"], repos_dir=repo.parent, steps=steps, params={"swe": {"n": 2}},
    )  # fmt: skip
    assert (manifest.name, manifest.rows, manifest.quarantined) == ("r1-swe", 2, 1)
    assert manifest.steps == steps and manifest.params == {"swe": {"n": 2}}
    assert store.read("r1-swe")["id"].to_list() == ["mini__t:repair", "mini__t:localize"]
    q = store.quarantine("r1-swe").to_dicts()
    assert q == [{"id": "mini__d", "metadata": json.dumps(dropped, default=str),
                  "reason": "FAIL_TO_PASS passes before the gold patch: x"}]  # fmt: skip
    # nothing kept: an empty dataset, every task in quarantine
    none = items.write_dataset(
        store, "r2", [], [("mini__d", dropped, "no FAIL_TO_PASS tests")],
        kinds=["repair"], repos_dir=repo.parent, steps=steps,
    )  # fmt: skip
    assert (none.rows, none.quarantined) == (0, 1)


def test_tasks_are_written_one_json_line_each(tmp_path):
    rows = [{"instance_id": "a", "text": "é"}, {"instance_id": "b", "path": Path("x")}]
    assert items.write_jsonl(tmp_path / "t.jsonl", rows) == 2
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8") == (
        '{"instance_id": "a", "text": "é"}\n{"instance_id": "b", "path": "x"}\n'
    )


# -- the flow's report ----------------------------------------------------------------------------------


def test_the_report_summarises_repositories_kinds_and_every_task(monkeypatch):
    published = {}
    monkeypatch.setattr(swe_flow, "create_markdown_artifact", lambda text, key, description: published.update(
        markdown=(text, key, description)))  # fmt: skip
    monkeypatch.setattr(swe_flow, "create_table_artifact", lambda table, key, description: published.update(
        table=(table, key, description)))  # fmt: skip
    synthesized = [
        {"repo": "mini", "baseline_tests": 8, "tried": 5, "tasks": [{}, {}],
         "rejected": {"no test fails": 2, "more than 50% of the tests fail": 1}},
        {"repo": "other", "baseline_tests": 3, "tried": 0, "tasks": [], "rejected": {}},
    ]  # fmt: skip
    row = {
        "repo": "mini",
        "mutation": "off_by_one",
        "modifier": "m",
        "FAIL_TO_PASS": ["a", "b"],
        "PASS_TO_PASS": ["c"],
    }
    checked = [
        {"instance_id": "mini__1", "kept": True, "reason": "", "seconds": 1.26, "row": row},
        {"instance_id": "mini__2", "kept": False, "reason": "with the gold patch: not resolved", "seconds": 0.04,
         "row": {"repo": "mini"}},
    ]  # fmt: skip
    swe_flow.report("r-swe@v1", synthesized, checked, Counter({"wrong_return": 2, "off_by_one": 1}))
    text, key, description = published["markdown"]
    assert (key, description) == ("swe-report", "SWE tasks r-swe@v1")
    assert text.splitlines() == [
        "# SWE tasks: `r-swe@v1`",
        "",
        "| repository | baseline tests | candidates | synthesised | rejected |",
        "|---|---:|---:|---:|---|",
        "| mini | 8 | 5 | 2 | more than 50% of the tests fail: 1, no test fails: 2 |",
        "| other | 3 | 0 | 0 | - |",
        "",
        "| mutation kind | validated tasks |",
        "|---|---:|",
        "| off_by_one | 1 |",
        "| wrong_return | 2 |",
        "",
        "1 of 2 synthesised tasks validated.",
        "- dropped `mini__2`: with the gold patch: not resolved",
    ]
    table, key, description = published["table"]
    assert (key, description) == ("swe-tasks", "every synthesised task and its validation")
    assert table == [
        {"instance_id": "mini__1", "repo": "mini", "mutation": "off_by_one", "modifier": "m", "FAIL_TO_PASS": 2,
         "PASS_TO_PASS": 1, "kept": True, "reason": "", "seconds": 1.3},
        {"instance_id": "mini__2", "repo": "mini", "mutation": None, "modifier": None, "FAIL_TO_PASS": 0,
         "PASS_TO_PASS": 0, "kept": False, "reason": "with the gold patch: not resolved", "seconds": 0.0},
    ]  # fmt: skip
