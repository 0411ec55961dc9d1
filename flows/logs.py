"""Errors that reach a user from inside a flow: one line on the console, the traceback in the log file.

Prefect logs a failing flow run's exception with its traceback to the console, once for every flow run
it passes through on its way up (a stage inside the curriculum inside `m1 run`: three times). `run_flow`
keeps the console to the log lines themselves (`ConsoleWithoutTracebacks`), writes every record,
tracebacks included, to ``$M1_HOME/logs/m1.log``, and turns whatever a flow raised into one `FlowFailed`
line naming the flow or task run it failed in, the project line that raised and what it was; the CLI
prints it and exits 2. A user error (an `M1Error`: a bad file, a bad setting) is its own line as it is.
The records also reach the Prefect API (Prefect's own handler), so the UI shows them on the run's page.
"""

from __future__ import annotations

import copy
import errno
import logging
import shutil
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from flows.errors import FlowFailed, InputError, M1Error
from flows.home import m1_home

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]  # the project's packages: where "failed at" points
FULL_DISK_BYTES = 1 << 20  # less free space than this under M1_HOME: say the disk is full


class ConsoleWithoutTracebacks(logging.Formatter):
    """Wraps a console formatter: records are shown without their traceback (the log file has it), and
    a record that only carries a failure's traceback (Prefect's "Encountered exception during execution",
    logged again by every flow run the failure passes through) is not shown at all: the CLI's one
    line says what failed and where."""

    def __init__(self, inner: logging.Formatter | None):
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            record = copy.copy(record)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return self.inner.format(record)


def _carries_a_failure(record: logging.LogRecord) -> bool:
    return bool(record.exc_info and record.exc_info[1] is not None) and record.levelno >= logging.ERROR


last_flow_run: tuple[Any, str] | None = None  # (id, name) of the flow run that logged last


class LogFile(logging.FileHandler):
    """$M1_HOME/logs/m1.log. A record it cannot write (a full disk) is noted, never printed: logging's
    default prints "--- Logging error ---" and a traceback on the terminal. It also notes the flow run
    that logged last (flows/interrupts.py marks it Crashed when a stopped command cannot unwind in time)."""

    failed: OSError | None = None

    def emit(self, record: logging.LogRecord) -> None:
        global last_flow_run
        if (run_id := getattr(record, "flow_run_id", None)) is not None:
            last_flow_run = (run_id, getattr(record, "flow_run_name", ""))
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        exc = sys.exc_info()[1]
        self.failed = exc if isinstance(exc, OSError) else OSError(str(exc))


class Failures(logging.Handler):
    """Where failures happened: the flow and task run names of each record that carries an exception,
    innermost first (a failure is logged by its own run before the runs it passes through)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[tuple[BaseException, str | None, str | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            flow_run = getattr(record, "flow_run_name", None)
            task_run = getattr(record, "task_run_name", None)
            self.seen.append((record.exc_info[1], flow_run, task_run))

    def where(self, exc: BaseException) -> str:
        chain = _chain(exc)
        for candidate in ([s for s in self.seen if s[0] in chain], self.seen):
            for _, flow_run, task_run in candidate:
                if flow_run or task_run:
                    if task_run:
                        return f"task run {task_run!r}" + (f" of flow run {flow_run!r}" if flow_run else "")
                    return f"flow run {flow_run!r}"
        return "a flow run"


def log_file() -> Path:
    return m1_home() / "logs" / "m1.log"


def _console_handlers() -> list[logging.Handler]:
    return [
        h
        for h in logging.getLogger().handlers  # Prefect's console handler sits on the root logger
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]


def _drop_failure_records(record: logging.LogRecord) -> bool:
    return not _carries_a_failure(record)


def quiet_user_tracebacks() -> LogFile:
    """Console handlers without tracebacks, and the full log file; idempotent. Returns the log file's
    handler."""
    # heavy: prefect
    from prefect.logging import configuration

    if not configuration.PROCESS_LOGGING_CONFIG:  # Prefect configures logging once, on first use
        configuration.setup_logging()
    path = log_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    for handler in _console_handlers():
        if not isinstance(handler.formatter, ConsoleWithoutTracebacks):
            handler.setFormatter(ConsoleWithoutTracebacks(handler.formatter))
            handler.addFilter(_drop_failure_records)
    for handler in root.handlers:
        if isinstance(handler, LogFile) and handler.baseFilename == str(path):
            return handler
    file_handler = LogFile(path, encoding="utf-8", delay=True)
    file_handler.setLevel(logging.INFO)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(file_handler)
    return file_handler


def prefect_home() -> Path:
    """Prefect's home folder (its database), created now if it does not exist yet."""
    # heavy: prefect
    from prefect.settings import PREFECT_HOME

    home = Path(PREFECT_HOME.value()).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def run_flow(flow: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a flow from the CLI: user errors stay one console line, and any other exception the flow
    raises becomes one too (`FlowFailed`: which run, which line, what), with the traceback in the log
    file. With ``return_state=True`` the flow's final state is returned once it is known to be a success."""
    try:
        prefect_home()
        log = quiet_user_tracebacks()
    except OSError as exc:  # a full or read-only disk under M1_HOME, before anything ran
        raise InputError(f"cannot write under {m1_home()}: {full_disk(exc) or exc}") from None
    failures = Failures()
    logging.getLogger().addHandler(failures)
    try:
        outcome = flow(*args, **kwargs)
        if kwargs.get("return_state"):
            outcome.result()  # the flow's own exception, if it failed
        return outcome
    except M1Error:
        raise
    except Exception as exc:
        raise FlowFailed(failure_line(exc, failures.where(exc), log)) from exc
    finally:
        logging.getLogger().removeHandler(failures)


def failure_line(exc: BaseException, where: str, log: LogFile) -> str:
    """``<where> failed at <file:line> (<function>): <what>; traceback in <log>`` on one line."""
    what = _one_line(f"{type(exc).__name__}: {exc}")
    if disk := full_disk(exc):
        what = f"{disk}: {what}"
    at = _project_frame(exc)
    log.flush()
    kept = (
        f"the traceback could not be written to {log.baseFilename} ({log.failed.strerror or log.failed})"
        if log.failed is not None
        else f"traceback in {log.baseFilename}"
    )
    return f"{where} failed{f' at {at}' if at else ''}: {what}; {kept}"


def full_disk(exc: BaseException) -> str:
    """What a full disk has to do with the failure, or "": "no space left on device (N free under
    M1_HOME)" for an ENOSPC anywhere in the exception's chain or those words in a message (libraries wrap
    the error in their own, e.g. safetensors; the failed write's space is often freed again by the time
    the line is written, so the free space alone does not tell); "the disk under M1_HOME is full" for any
    other failure while M1_HOME's disk has less than FULL_DISK_BYTES free (the Prefect server, whose
    database is there, fails with an HTTP 500)."""
    chain = _chain(exc)
    enospc = any(isinstance(e, OSError) and e.errno == errno.ENOSPC for e in chain)
    said = any("no space left on device" in str(e).lower() for e in chain)
    home = m1_home()
    probe = next((p for p in (home, *home.parents) if p.exists()), None)
    free = shutil.disk_usage(probe).free if probe is not None else None
    if enospc or said:
        return f"no space left on device ({_size(free)} free under {home})"
    if free is not None and free < FULL_DISK_BYTES:
        return f"the disk under {home} is full ({_size(free)} free)"
    return ""


def _size(n: int | None) -> str:
    if n is None:
        return "? bytes"
    return f"{n} bytes" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _project_frame(exc: BaseException) -> str:
    """``path:line (function)`` of the last frame in the project's own code where ``exc`` passed."""
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename)
        if path.is_relative_to(ROOT) and ".venv" not in path.parts and "site-packages" not in path.parts:
            found = f"{path.relative_to(ROOT)}:{frame.lineno} ({frame.name})"
    return found
