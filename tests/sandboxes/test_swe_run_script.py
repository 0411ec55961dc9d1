"""The SWE run script and its log, without Docker.

`script` is run here by bash for real, with the container's paths (/src, /testbed, /work) moved into
a temporary folder: the patch applies (or the run stops with git's complaint), the graded test files
and every conftest.py are restored to the instance's version, extra files land where asked, and the
log carries SWE-bench's markers. `run_tests` is checked against the recording double of the docker
SDK from test_container_args.py; the docker tests (tests/swe -m docker) run it on a real engine.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from sandboxes.limits import RunResult
from sandboxes.swe_run import (
    APPLIED,
    APPLY_FAILED,
    DEFAULT_TEST_CMD,
    END,
    EXIT_CODE,
    START,
    SWE_LIMITS,
    files_of,
    run_tests,
    script,
)
from sandboxes.swe_run import (
    TestRun as SWETestRun,
)
from tests.fakes.docker import FakeDocker


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def box(tmp_path) -> Path:
    """/src (the instance's one-commit repository), an empty /testbed and /work, under tmp_path."""
    src = tmp_path / "src"
    files = {
        "lib.py": "VALUE = 1\n",
        "conftest.py": "ROOT = 'original'\n",
        "tests/conftest.py": "FIXTURE = 'original'\n",
        "tests/test_a.py": "def test_a():\n    assert VALUE == 2\n",
        "tests/test b.py": "def test_b():\n    pass\n",
    }
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    _git(tmp_path, "init", "-q", str(src))
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "base")
    (tmp_path / "testbed").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path


def run_script(box: Path, text: str, work: dict[str, str]) -> subprocess.CompletedProcess:
    for name, content in work.items():
        (box / "work" / name).write_text(content)
    text = (
        text.replace("/testbed", f"{box}/testbed")
        .replace("/src/", f"{box}/src/")
        .replace("/work/", f"{box}/work/")
    )
    # Run from an empty folder outside any git repository: a script whose `cd` failed (as a mutated one
    # may) must not run its git commands on the checkout that runs these tests.
    elsewhere = box / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(box)}
    return subprocess.run(
        ["bash", "-c", text], capture_output=True, text=True, timeout=30, cwd=elsewhere, env=env
    )


PATCH = """\
diff --git a/lib.py b/lib.py
--- a/lib.py
+++ b/lib.py
@@ -1 +1 @@
-VALUE = 1
+VALUE = 2
diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1,2 +1,2 @@
 def test_a():
-    assert VALUE == 2
+    assert True
diff --git a/tests/conftest.py b/tests/conftest.py
--- a/tests/conftest.py
+++ b/tests/conftest.py
@@ -1 +1 @@
-FIXTURE = 'original'
+FIXTURE = 'patched'
diff --git a/sub/conftest.py b/sub/conftest.py
new file mode 100644
--- /dev/null
+++ b/sub/conftest.py
@@ -0,0 +1 @@
+NEW = 1
"""

CHECK = """\
echo "args: $*"
cat lib.py tests/test_a.py conftest.py tests/conftest.py
test -e sub/conftest.py && echo 'new conftest kept'
echo "pwd: $(pwd)"
exit 3
"""


def test_the_patch_applies_and_the_graded_files_are_the_instances(box):
    files = ["tests/test_a.py", "tests/test b.py"]
    text = script(files, patch=True, extra={"tools/check.sh": "extra-0"}, test_cmd="bash tools/check.sh")
    done = run_script(box, text, {"model.patch": PATCH, "extra-0": CHECK})
    log = done.stdout
    assert done.returncode == 0, log + done.stderr  # the script reports the exit code, it does not fail
    assert done.stderr == ""  # exec 2>&1: everything goes to the log
    before, rest = log.split(START + "\n")
    assert before.endswith(APPLIED + "\n")
    out, after = rest.split(END + "\n")
    assert out == (
        "args: tests/test_a.py tests/test b.py\n"
        "VALUE = 2\n"  # the patch's change to the code is there
        "def test_a():\n    assert VALUE == 2\n"  # the test the patch rewrote is back
        "ROOT = 'original'\n"
        "FIXTURE = 'original'\n"  # every conftest.py as the instance has it
        f"pwd: {box}/testbed\n"
    )
    assert after == f"{EXIT_CODE}: 3\n"
    assert (box / "src" / "lib.py").read_text() == "VALUE = 1\n"  # the image's copy is untouched
    assert not (box / "testbed" / "sub" / "conftest.py").exists()  # a conftest the patch added is gone


def test_a_patch_that_needs_recounting_still_applies(box):
    sloppy = PATCH.split("diff --git a/tests/test_a.py")[0].replace("@@ -1 +1 @@", "@@ -1,3 +1,3 @@")
    text = script([], patch=True, extra={}, test_cmd="cat lib.py")
    log = run_script(box, text, {"model.patch": sloppy}).stdout
    assert APPLIED in log and log.split(START + "\n")[1] == f"VALUE = 2\n{END}\n{EXIT_CODE}: 0\n"


def test_a_patch_that_does_not_apply_stops_the_run_with_gits_complaint(box):
    bad = PATCH.replace("-VALUE = 1", "-VALUE = 7")
    text = script(["tests/test_a.py"], patch=True, extra={}, test_cmd="cat")
    done = run_script(box, text, {"model.patch": bad})
    assert done.returncode == 91
    assert done.stdout.rstrip().endswith(APPLY_FAILED)
    assert "lib.py" in done.stdout and "patch does not apply" in done.stdout
    assert START not in done.stdout and APPLIED not in done.stdout


def test_without_a_patch_nothing_is_applied(box):
    text = script(["tests/test_a.py"], patch=False, extra={}, test_cmd="cat")
    done = run_script(box, text, {"model.patch": PATCH})
    assert APPLIED not in done.stdout and "git apply" not in text
    assert done.stdout == f"{START}\ndef test_a():\n    assert VALUE == 2\n{END}\n{EXIT_CODE}: 0\n"


def test_a_failed_copy_stops_at_once(box):
    text = script([], patch=False, extra={}, test_cmd="true")
    done = run_script(box, text.replace(f"{'/src'}/.", "/nonexistent-src/."), {})
    assert done.returncode == 90 and START not in done.stdout


def test_script_text():
    text = script(["a.py", "b c.py"], patch=False, extra={"x/y z.txt": "extra-0"}, test_cmd="T")
    assert text == (
        "exec 2>&1\n"
        "set -u\n"
        "cp -R /src/. /testbed/ || exit 90\n"
        "cd /testbed\n"
        'for f in a.py \'b c.py\'; do git cat-file -e HEAD:"$f" 2>/dev/null && git checkout -q HEAD -- "$f"; done\n'
        "git ls-files -z -- '*conftest.py' | xargs -0r git checkout -q HEAD --\n"
        "git ls-files -z --others -- '*conftest.py' | xargs -0r rm -f --\n"
        "mkdir -p \"$(dirname 'x/y z.txt')\" && cp /work/extra-0 'x/y z.txt'\n"
        f"echo '{START}'\n"
        "T a.py 'b c.py'\n"
        "rc=$?\n"
        f"echo '{END}'\n"
        f"echo '{EXIT_CODE}: '$rc\n"
    )
    assert script([], patch=False, extra={}, test_cmd="T").splitlines()[4] == ":"


def test_script_patch_lines():
    lines = script([], patch=True, extra={}, test_cmd="T").splitlines()
    assert lines[4:10] == [
        "if git apply -v /work/model.patch >/tmp/m1-apply.log 2>&1 \\",
        "   || git apply -v --recount /work/model.patch >/tmp/m1-apply.log 2>&1; then",
        f"  echo '{APPLIED}'",
        "else",
        f"  cat /tmp/m1-apply.log; echo '{APPLY_FAILED}'; exit 91",
        "fi",
    ]


def test_markers_are_swe_benchs():
    assert (APPLIED, APPLY_FAILED, START, END, EXIT_CODE) == (
        ">>>>> Applied Patch",
        ">>>>> Patch Apply Failed",
        ">>>>> Start Test Output",
        ">>>>> End Test Output",
        ">>>>> Test Exit Code",
    )


def test_files_of_node_ids():
    ids = ["t/b.py::T::test_x[a::b]", "t/a.py::test_y", "t/b.py::test_z", "t/c.py"]
    assert files_of(ids) == ["t/a.py", "t/b.py", "t/c.py"]


# -- the log read back -------------------------------------------------------------------------------------


def result(status="ok", stderr=b"", exit_code=0) -> RunResult:
    sig = signal.SIGKILL if exit_code is None else None
    return RunResult(status, exit_code, sig, b"", stderr, 1.0, 0.5, 10.0, False)


def test_a_completed_run():
    log = f"{APPLIED}\n{START}\n1 passed\n{END}\n{EXIT_CODE}: 0\n"
    run = SWETestRun(result(), log, True)
    assert (run.applied, run.completed, run.limit, run.apply_error) == (True, True, None, "")
    assert run.test_output == "\n1 passed\n"
    assert run.describe() == "completed"


def test_no_patch_counts_as_applied():
    assert SWETestRun(result(), "", False).applied
    assert not SWETestRun(result(), "", True).applied


def test_a_patch_that_did_not_apply():
    log = "checking patch lib.py...\nerror: patch failed: lib.py:1\n" + f"{APPLY_FAILED}\n"
    run = SWETestRun(result("runtime_error", exit_code=91), log, True)
    assert run.apply_error == "checking patch lib.py...\nerror: patch failed: lib.py:1"
    assert run.describe() == "the patch does not apply"
    assert run.test_output == "" and not run.completed
    long = SWETestRun(result(), "x" * 3000 + "END" + APPLY_FAILED, True)
    assert long.apply_error == ("x" * 3000 + "END")[-2000:]


@pytest.mark.parametrize("limit", ["timeout", "memory", "output_limit"])
def test_a_run_stopped_by_a_limit(limit):
    run = SWETestRun(result(limit, exit_code=None), f"{APPLIED}\n{START}\npartial", True)
    assert run.limit == limit
    assert run.describe() == f"stopped by the {limit} limit ({run.result.describe()})"
    assert run.test_output == "\npartial"


def test_incomplete_and_sandbox_error():
    run = SWETestRun(result("killed", exit_code=None), f"{START}\nx\n{END}\n", False)
    assert run.limit is None and not run.completed  # no exit code line
    assert run.describe() == f"the test run did not complete: {run.result.describe()}"
    assert not SWETestRun(result(), f"{EXIT_CODE}: 0", False).completed  # no end marker
    err = SWETestRun(
        result("sandbox_error", stderr=b"\xff" + b"e" * 600 + b"engine gone", exit_code=None), "", True
    )
    assert err.describe() == "sandbox error: " + ("e" * 600 + "engine gone")[-500:]
    short = SWETestRun(result("sandbox_error", stderr=b"bad \xff byte", exit_code=None), "", True)
    assert short.describe() == "sandbox error: bad \ufffd byte"


def test_test_output_stops_at_the_first_end_marker():
    log = f"{START}\na\n{END}\n{START}\nb\n{END}\n"
    assert SWETestRun(result(), log, False).test_output == "\na\n"


# -- run_tests through the docker SDK double ----------------------------------------------------------------


def recording_client(log: bytes) -> tuple[FakeDocker, dict[str, str]]:
    """The docker double, also keeping the work dir's files as the container saw them at its start."""
    client = FakeDocker(chunks=[(log, None)])
    seen: dict[str, str] = {}
    create = client.containers.create

    def create_and_record(image, command, **kw):
        c = create(image, command, **kw)
        start = c.start

        def recording_start():
            seen.update({p.name: p.read_text() for p in c.host("/work/run.sh").parent.iterdir()})
            start()

        c.start = recording_start
        return c

    client.containers.create = create_and_record
    return client, seen


def test_run_tests_hands_the_container_its_script_patch_and_extras():
    log = f"{APPLIED}\n{START}\nok\n{END}\n{EXIT_CODE}: 0\n"
    client, seen = recording_client(log.encode())
    run = run_tests(
        "m1-swe-instance:x",
        ["tests/test_a.py"],
        patch="the diff\n",
        extra={"a/b.py": "B", "c.txt": "C"},
        client=client,
        testbed_mb=128,
    )
    assert run.log == log and run.patch_given and run.describe() == "completed"
    assert seen == {
        "run.sh": script(
            ["tests/test_a.py"],
            patch=True,
            extra={"a/b.py": "extra-0", "c.txt": "extra-1"},
            test_cmd=DEFAULT_TEST_CMD,
        ),
        "model.patch": "the diff\n",
        "extra-0": "B",
        "extra-1": "C",
    }
    (c,) = client.created
    assert c.image == "m1-swe-instance:x"
    assert c.command[-2:] == ["bash", "/work/run.sh"]
    assert c.kwargs["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=64m", "/testbed": "rw,nosuid,nodev,size=128m"}
    assert c.kwargs["mem_limit"] == "2048m" and c.kwargs["pids_limit"] == 256  # SWE_LIMITS
    assert c.command[3] == str(180 + 30)
    assert c.stdin_seen == b""


def test_run_tests_defaults():
    client, seen = recording_client(b"\xff log")
    run = run_tests("img", ["t.py"], patch="  \n", test_cmd="pytest -x", client=client)
    assert not run.patch_given and run.log == "\ufffd log"
    assert seen == {
        "run.sh": script(["t.py"], patch=False, extra={}, test_cmd="pytest -x"),
        "model.patch": "  \n",
    }
    (c,) = client.created
    assert c.kwargs["tmpfs"]["/testbed"] == "rw,nosuid,nodev,size=256m"
    assert c.command[3] == str(int(SWE_LIMITS.wall_s) + 30)
    client, seen = recording_client(b"log")
    assert not run_tests("img", ["t.py"], client=client).patch_given  # no patch by default
    assert seen["model.patch"] == "" and "git apply" not in seen["run.sh"]


def test_run_result_describe():
    killed = RunResult("timeout", None, signal.SIGKILL, b"", b"", 1.23456, 0.5, 12.34, False)
    assert killed.describe() == "timeout (signal SIGKILL, 1.235s wall, 0.500s cpu, 12.3 MB)"
    exited = RunResult("runtime_error", 3, None, b"", b"", 0.1, 0.02, 5.0, False)
    assert exited.describe() == "runtime_error (exit 3, 0.100s wall, 0.020s cpu, 5.0 MB)"
