"""SWE pieces that need no Docker: task records, patches, localisation, mutation, statements."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from flows.swe.synthesize import failure_messages, split, statement
from verifiers.base import ItemError
from verifiers.swe import SWETask, extract_patch, f1, gold_locations, locations_in, patch_files
from verifiers.swe.mutate import KINDS, mutants

DIFF = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,2 +1,2 @@ def f(x):\n     y = x\n-    return x\n+    return x + 1\n"
ROW = {
    "instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": DIFF, "test_patch": "",
    "FAIL_TO_PASS": '["tests/test_m.py::test_f"]', "PASS_TO_PASS": "[]", "problem_statement": "f is off",
    "version": "1.0", "created_at": "2024-01-01",
}  # fmt: skip


def test_swe_bench_rows_are_read_as_they_are():
    task = SWETask.from_row(ROW)
    assert task.FAIL_TO_PASS == ["tests/test_m.py::test_f"] and task.PASS_TO_PASS == []
    assert task.python_packages == ["pytest"]  # not in SWE-bench's fields: the default
    assert task.extra == {"version": "1.0", "created_at": "2024-01-01"}
    assert SWETask.from_row(task.to_row()) == task


def test_task_fields_are_also_found_in_an_items_metadata():
    item = {"id": "x:repair", "task": "repair", "prompt": "p", "metadata": json.dumps(ROW), "response": "r"}
    assert SWETask.from_row(item).instance_id == "o__r-1"
    assert SWETask.from_row(item).extra == {"version": "1.0", "created_at": "2024-01-01"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"patch": None}, "task is missing patch"),
        ({"FAIL_TO_PASS": "not json"}, "`FAIL_TO_PASS` is a string but not a JSON list"),
        ({"repo": "../etc"}, "`repo` must be a relative name"),
        ({"python_packages": [1]}, "`python_packages` must be a list of strings"),
    ],
)
def test_bad_task_rows_say_why(change, message):
    with pytest.raises(ItemError, match=message.replace("(", r"\(")):
        SWETask.from_row({**ROW, **change})


def test_patches_are_found_fenced_or_bare():
    assert extract_patch(f"<think>hm</think>Here:\n```diff\n{DIFF}```\nDone.") == DIFF
    assert extract_patch(f"Here:\n```\n{DIFF}```") == DIFF
    assert extract_patch(f"The fix is\n{DIFF}") == DIFF
    assert extract_patch("no diff at all") == ""


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ("", "empty patch"),
        ("   \n", "empty patch"),
        ("hello\n", "malformed diff: no file changes found"),
        ("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a\n", "malformed diff"),
        ("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "patch touches files outside the repository: ../x"),
        (
            "--- /dev/null\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+b\n",
            "patch touches files outside the repository: /etc/passwd",
        ),
        (
            "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n",
            "outside the repository: .git/config",
        ),
    ],
)
def test_unusable_patches_are_refused_with_the_reason(patch, reason):
    with pytest.raises(ItemError, match=reason.replace(".", r"\.")):
        patch_files(patch)
    assert patch_files(DIFF) == ["src/m.py"]


def test_locations_and_their_f1():
    files, functions = locations_in("Change `./src/m.py::Box.f` and maybe src/n.py.")
    assert files == {"src/m.py", "src/n.py"} and functions == {"src/m.py::f"}
    assert gold_locations(SWETask.from_row(ROW)) == ({"src/m.py"}, {"src/m.py::f"})  # from the hunk header
    assert f1({"a", "b"}, {"a"}) == pytest.approx(2 / 3) and f1(set(), {"a"}) == 0.0


MODULE = textwrap.dedent("""
    def clamp(x, low, high):
        if x < low:
            return low
        if x > high and high is not None:
            return high
        return x


    def window(items, size):
        out = []
        for i in range(len(items) - size + 1):
            out.append(items[i : i + size])
        total = sum(len(w) for w in out)
        return out if total >= 0 else None


    def ratio(a, b):
        scale = 2 * 3
        return divmod(a * scale, b)


    def total(rows):
        acc = 0
        count = 0
        for row in rows:
            acc += row
            count += 1
        while count > 10:
            count -= 1
        return acc, count
""")


def test_mutants_are_deterministic_by_seed_and_cover_every_kind(tmp_path):
    (tmp_path / "lib.py").write_text(MODULE)
    first = [(m.kind, m.modifier, m.key) for m in mutants(tmp_path, ["lib.py"], seed=1)]
    again = [(m.kind, m.modifier, m.key) for m in mutants(tmp_path, ["lib.py"], seed=1)]
    other = [(m.kind, m.modifier, m.key) for m in mutants(tmp_path, ["lib.py"], seed=2)]
    assert first == again and first != other
    assert {kind for kind, _, _ in first} == set(KINDS)
    assert len({key for _, _, key in first}) == len(first)  # no duplicates
    for m in mutants(tmp_path, ["lib.py"], seed=1):
        compile(m.source, "lib.py", "exec")
        assert m.source != MODULE


LOG = textwrap.dedent("""
    ______ test_a ______
        def test_a():
    >       assert f(1) == 2
    E       assert 3 == 2
    E        +  where 3 = f(1)
    ______ test_b ______
    E   ValueError: <object at 0x7f00deadbeef>
    FAILED tests/test_m.py::test_a - assert 3 == 2
    FAILED tests/test_m.py::test_b - ValueError: <object at 0x7f00deadbeef>
""").replace("\n    ______ test_a", "\n= FAILURES =\n______ test_a")


def test_statement_names_the_failures_never_the_fix():
    assert failure_messages(LOG) == {
        "tests/test_m.py::test_a": "assert 3 == 2",
        "tests/test_m.py::test_b": "ValueError: <object at 0x…>",
    }
    text = statement("r", ["tests/test_m.py::test_a", "tests/test_m.py::test_b"], LOG)
    assert "2 tests" in text and "`tests/test_m.py::test_a`: assert 3 == 2" in text
    assert "E       assert 3 == 2" in text and "0x7f00" not in text


def test_tasks_are_spread_over_repositories():
    assert split(7, 3) == [3, 2, 2] and split(2, 3) == [1, 1, 0]


def test_swe_is_off_by_default_in_the_pipeline_config():
    from flows.config import PipelineConfig, load_config

    assert PipelineConfig().swe.enabled is True  # m1 run includes the SWE subflow
    assert load_config(overrides=["swe.n_tasks=3", "swe.kinds=[repair]"]).swe.kinds == ["repair"]


def test_synthesize_without_repositories_is_a_one_line_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", "swe", "synthesize", "--repos", str(tmp_path),
         "--output", str(tmp_path / "t.jsonl")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path}: no task repository found (make them with `m1 swe repos --output {tmp_path}`)"
    ]


def test_statement_rewrite_goes_through_the_endpoint_client():
    """A real OpenAI-compatible server on loopback answers; the rewrite is its reply."""
    from flows.swe.synthesize import rewrite
    from tests.fakes.openai import serve
    from verifiers.endpoint import Endpoint

    with serve(chat=lambda body: ["Issue: f is off by one."]) as (root, server):
        endpoint = Endpoint(url=f"{root}/v1", retries=0)
        assert rewrite(endpoint, "isodate", "2 tests fail: ...") == "Issue: f is off by one."
    asked = [body["messages"][-1]["content"] for body in server.posted]
    assert "isodate" in asked[0] and "2 tests fail" in asked[0] and "Do not guess the cause" in asked[0]


def test_harness_log_markers_are_swebench_markers():
    from swebench.harness import constants as c

    from sandboxes import swe_run as r

    assert (r.APPLIED, r.APPLY_FAILED, r.START, r.END, r.EXIT_CODE) == (
        c.APPLY_PATCH_PASS, c.APPLY_PATCH_FAIL, c.START_TEST_OUTPUT, c.END_TEST_OUTPUT, c.TEST_EXIT_CODE,
    )  # fmt: skip
