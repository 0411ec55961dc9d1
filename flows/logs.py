"""Errors that reach a user from inside a flow: one line on the console, the traceback in the log file.

Prefect logs a failing flow run's exception with its traceback to the console. For a user error (an
`M1Error`: a bad file, a bad setting) that is noise around the one line that matters, which the CLI
prints anyway. `run_flow` makes the console show such records without their traceback, and writes
every record, tracebacks included, to ``$M1_HOME/logs/m1.log``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from flows.errors import M1Error
from flows.home import m1_home

T = TypeVar("T")


class OneLineUserErrors(logging.Formatter):
    """Wraps a console formatter: a record carrying an M1Error is shown without its traceback."""

    def __init__(self, inner: logging.Formatter | None):
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, M1Error):
            record = copy.copy(record)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return self.inner.format(record)


def log_file() -> Path:
    return m1_home() / "logs" / "m1.log"


def quiet_user_tracebacks() -> Path:
    """Install the console formatter on Prefect's console handlers and a full log file; idempotent."""
    # heavy: prefect
    from prefect.logging import configuration

    if not configuration.PROCESS_LOGGING_CONFIG:  # Prefect configures logging once, on first use
        configuration.setup_logging()
    path = log_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()  # Prefect's console handler sits on the root logger
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            if not isinstance(handler.formatter, OneLineUserErrors):
                handler.setFormatter(OneLineUserErrors(handler.formatter))
    if str(path) not in {getattr(h, "baseFilename", None) for h in root.handlers}:
        file_handler = logging.FileHandler(path, encoding="utf-8")
        file_handler.setLevel(logging.INFO)
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        root.addHandler(file_handler)
    return path


def prefect_home() -> Path:
    """Prefect's home folder (its database), created now if it does not exist yet."""
    # heavy: prefect
    from prefect.settings import PREFECT_HOME

    home = Path(PREFECT_HOME.value()).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def run_flow(flow: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a flow from the CLI with user errors kept to one console line (traceback in the log file)."""
    prefect_home()
    quiet_user_tracebacks()
    return flow(*args, **kwargs)
