"""An error inside a flow (flows/logs.py): `run_flow` turns it into one line naming the innermost run it
failed in, the project line that raised and what it was, with the traceback in the log file; the console
shows no traceback; a full disk is said as such; and every record (steps, warnings, the error with its
traceback) reaches the Prefect API, where the UI shows it on the run's page."""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from prefect import flow, get_run_logger, task

from flows import logs
from flows.errors import FlowFailed, InputError

HERE = "tests/foundation/test_flow_errors.py"


def _boom() -> None:
    raise ValueError("the server went away\nsecond line")


@task(name="fragile-step")
def fragile_step(n: int) -> int:
    get_run_logger().info("step %d of the task", n)
    _boom()
    return n


@flow(name="inner-steps", flow_run_name="inner-run")
def inner(fail_in_task: bool) -> int:
    get_run_logger().warning("a warning the UI must show")
    if fail_in_task:
        return fragile_step(3)
    _boom()
    return 0


@flow(name="outer", flow_run_name="outer-run")
def outer(fail_in_task: bool = False) -> int:
    get_run_logger().info("outer step 1/2")
    return inner(fail_in_task)


@flow(name="user-error", flow_run_name="user-error-run")
def user_error() -> None:
    raise InputError("bad.jsonl: no prompt column")


def _flow_run_logs(name: str) -> list[tuple[int, str]]:
    """(level, message) of every log record of the newest flow run named ``name``, from the API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=30)
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
        newest = max(runs, key=lambda r: r.created)
        found = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[newest.id])))
    return [(r.level, r.message) for r in found]


@pytest.mark.parametrize("fail_in_task", [False, True], ids=["in-a-subflow", "in-a-task"])
def test_an_error_in_a_nested_run_is_one_line_naming_the_run_and_line(
    prefect_harness, m1_home, capfd, fail_in_task
):
    with pytest.raises(FlowFailed) as failed:
        logs.run_flow(outer, fail_in_task)
    line = str(failed.value)
    where = "task run 'fragile-step-" if fail_in_task else "flow run 'inner-run' failed"
    assert line.startswith(where), line
    assert f" failed at {HERE}:" in line and "(_boom): ValueError: the server went away second line" in line
    assert line.endswith(f"; traceback in {m1_home / 'logs' / 'm1.log'}"), line
    assert "\n" not in line
    assert "Traceback" not in capfd.readouterr().err  # the console: log lines without tracebacks
    log = (m1_home / "logs" / "m1.log").read_text()
    assert "Traceback (most recent call last)" in log and "the server went away" in log

    # the same records in the API, for the UI: the step, the warning, the error with its traceback
    inner_logs = _flow_run_logs("inner-run")
    assert (logging.WARNING, "a warning the UI must show") in inner_logs
    errors = [m for level, m in inner_logs if level == logging.ERROR]
    assert any("ValueError" in m and "Traceback" in m for m in errors), errors
    assert (logging.INFO, "outer step 1/2") in _flow_run_logs("outer-run")


def test_a_failed_run_asked_for_its_state_is_the_same_line(prefect_harness, m1_home):
    """`m1 run` asks for the flow's final state (for the run's id): a failed one is the same one line."""
    with pytest.raises(FlowFailed, match=r"^flow run 'inner-run' failed at "):
        logs.run_flow(outer, False, return_state=True)
    state = logs.run_flow(user_flow_that_works, return_state=True)
    assert state.is_completed() and state.result() == 7


@flow(name="works", flow_run_name="works-run")
def user_flow_that_works() -> int:
    return 7


def test_a_user_error_inside_a_flow_stays_its_own_line(prefect_harness, m1_home):
    with pytest.raises(InputError, match=r"^bad.jsonl: no prompt column$"):
        logs.run_flow(user_error)


def test_a_full_disk_is_said_as_such(m1_home, monkeypatch):
    m1_home.mkdir(parents=True)
    said = rf"no space left on device \(\d+(\.\d)? (bytes|MB) free under {re.escape(str(m1_home))}\)"
    full = OSError(errno.ENOSPC, "No space left on device")
    assert re.fullmatch(said, logs.full_disk(full))
    wrapped = RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)")
    assert re.fullmatch(said, logs.full_disk(wrapped))  # a library's own error, in words
    try:
        try:
            raise full
        except OSError as exc:
            raise RuntimeError("could not save") from exc
    except RuntimeError as exc:
        assert re.fullmatch(said, logs.full_disk(exc))  # anywhere in the chain
    assert logs.full_disk(ValueError("x")) == ""  # room on the disk: nothing to say
    usage = shutil.disk_usage(m1_home)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=logs.FULL_DISK_BYTES - 1))
    assert logs.full_disk(ValueError("Server error '500 Internal Server Error'")) == (
        f"the disk under {m1_home} is full ({logs.FULL_DISK_BYTES - 1} bytes free)"
    )  # any failure on a full disk: the Prefect server's database is on it


def test_the_line_says_when_the_log_file_could_not_be_written(tmp_path):
    handler = logs.LogFile(tmp_path / "m1.log", delay=True)
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError:
        handler.handleError(logging.makeLogRecord({"msg": "x"}))  # what logging calls on a failed write
    try:
        _boom()
    except ValueError as exc:
        line = logs.failure_line(exc, "flow run 'r'", handler)
    assert line.startswith(f"flow run 'r' failed at {HERE}:")
    assert line.endswith(
        f"; the traceback could not be written to {tmp_path / 'm1.log'} (No space left on device)"
    ), line


def test_the_console_shows_log_lines_without_tracebacks():
    console = logs.ConsoleWithoutTracebacks(logging.Formatter("%(levelname)s %(message)s"))
    try:
        _boom()
    except ValueError:
        record = logging.LogRecord("x", logging.WARNING, __file__, 1, "it failed", None, sys.exc_info())
    assert console.format(record) == "WARNING it failed"
    assert record.exc_info is not None  # the file handler still gets the traceback
    assert logs._drop_failure_records(record)  # a warning with an exception is still shown
    record.levelno = logging.ERROR
    assert not logs._drop_failure_records(record)  # an error record that carries a traceback is not


def test_setting_up_the_log_on_a_full_disk_is_one_line(m1_home, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "mkdir", full)
    with pytest.raises(InputError, match=rf"^cannot write under {re.escape(str(m1_home))}: "):
        logs.run_flow(user_error)
    assert not os.path.exists(m1_home)


@pytest.mark.slow
def test_a_dead_server_inside_a_flow_is_one_line_exit_2(tmp_path):
    """`m1 logic calibrate` against an endpoint nobody listens on: the sampling task fails after its
    retries; the user sees one line naming the task run, the project line and the endpoint, exit 2."""
    import socket
    import subprocess

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env |= {"M1_HOME": str(home), "HOME": str(tmp_path)}
    m1 = [sys.executable, "-c", "from flows.cli import main; main()"]
    endpoint = f"http://127.0.0.1:{port}/v1"
    done = subprocess.run(
        [*m1, "logic", "calibrate", "--endpoint", endpoint, "--k", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert re.match(
        r"error: task run '[^']+' of flow run '[^']+' failed at verifiers/endpoint\.py:\d+ ", errors[0]
    )
    assert f"{endpoint}/chat/completions: unreachable" in errors[0]
    assert errors[0].endswith(f"; traceback in {home / 'logs' / 'm1.log'}")
    assert "Traceback" in (home / "logs" / "m1.log").read_text()
