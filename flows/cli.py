"""`m1`: the command line. Each group lives in flows/commands/<group>.py; benchmarks in flows/bench/.

Heavy libraries (torch, transformers, prefect, polars, ...) are imported inside commands, each under a
`# heavy: <library>` comment, so `m1 --help` stays fast (about 0.6 s of CPU, against 3.5 s when it pulled
torch); everything else is imported at the top. tests/foundation/test_imports_at_top.py holds both.
User errors (bad files, bad config) print one line and exit with code 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from flows import interrupts
from flows.bench import app as bench_app
from flows.commands import (
    curate,
    data,
    experiment,
    genrm,
    logic,
    model,
    pipeline,
    serve,
    swe,
    tasks,
    train,
    verify,
)
from flows.errors import M1Error
from flows.home import m1_home
from m1model.allocator import keep_freed_memory

app = typer.Typer(
    name="m1",
    help="MiniMax-M1 RL pipeline: curate data, score rewards, train with CISPO.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
pipeline.register(app)  # m1 run, m1 ui, m1 deploy
verify.register(app)  # m1 verify, m1 verifiers list
app.add_typer(data.app, name="data", help="The dataset store: list datasets and versions, show one.")
app.add_typer(curate.app, name="curate", help="Data curation steps: clean, dedup, decontaminate, pass rate.")
app.add_typer(logic.app, name="logic", help="SynLogic-style logic tasks: list, generate, calibrate.")
app.add_typer(
    tasks.app, name="tasks", help="Task datasets of a run: logic puzzles, code problems with tests."
)
app.add_typer(model.app, name="model", help="The bundled hybrid model: init, probe-precision.")
app.add_typer(train.app, name="train", help="Curriculum stages of CISPO training; rerun one stage alone.")
app.add_typer(experiment.app, name="experiment", help="The paper's claims measured in miniature: algorithms.")
app.add_typer(serve.app, name="serve", help="HTTP services: the reward service, the model.")
app.add_typer(swe.app, name="swe", help="SWE tasks: repos, images, synthesize, validate, evaluate.")
app.add_typer(
    genrm.app,
    name="genrm",
    help="Generative reward models: general data, judge training, eval, Swiss rounds.",
)
app.add_typer(
    bench_app, name="bench", help="Benchmarks; each prints ratios against a baseline run alongside."
)

err = Console(stderr=True)


def _prefect_defaults() -> None:
    """Offline-friendly Prefect defaults; the user's own settings win.

    Prefect's database lives under ``$M1_HOME/prefect`` (one project's runs, not every project's), unless
    the user points Prefect elsewhere: PREFECT_HOME or PREFECT_API_URL set, or a Prefect profile of their
    own in ~/.prefect/profiles.toml."""
    user_configured = {"PREFECT_HOME", "PREFECT_API_URL"} & set(os.environ) or (
        Path.home() / ".prefect" / "profiles.toml"
    ).exists()
    if not user_configured:
        os.environ["PREFECT_HOME"] = str(m1_home() / "prefect")
        # Prefect tries to create its home on import; a command that fails on bad input must write
        # nothing, so the folder is made when a flow or the server first runs (flows.logs.prefect_home).
        warnings.filterwarnings("ignore", message="Failed to create the Prefect home directory")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The embedded server shares 2 cores with the work itself: give it time to come up.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


# Width of Rich's consoles when no standard stream is a terminal (CI, `m1 ... > file`, a subprocess):
# Rich falls back to 80 columns there and cuts tables and lines at it; output for a file or a pipe is
# read whole, so it is laid out as wide as it needs.
NOT_A_TERMINAL_WIDTH = 1000


@contextlib.contextmanager
def _console_width() -> Iterator[None]:
    """Tables and lines uncut while a command runs with no terminal (Rich reads COLUMNS whenever it
    measures a console, so this also reaches the consoles the command modules made at import); a
    COLUMNS the user set wins, and a terminal keeps its own width."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if "COLUMNS" in os.environ or any(_is_terminal(s) for s in streams):
        yield
        return
    os.environ["COLUMNS"] = str(NOT_A_TERMINAL_WIDTH)
    try:
        yield
    finally:
        os.environ.pop("COLUMNS", None)


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # replaced or closed streams are not terminals
        return False


def main() -> None:
    keep_freed_memory()  # before any tensor: training's temporaries stay in the heap (page faults otherwise)
    interrupts.supervise()  # the process the terminal started waits here; the command runs in a worker
    interrupts.install()  # Ctrl-C and SIGTERM: stopped within seconds, one line, exit 130 / 143
    _prefect_defaults()
    try:
        with _console_width():
            app()
    except M1Error as exc:
        if interrupts.received is None:  # an error the interrupt itself caused is not the user's
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            sys.exit(2)
    except BaseException:  # after an interrupt, whatever it shook loose on the way out is for the log
        if interrupts.received is None:
            raise
    finally:
        if interrupts.received is not None:
            interrupts.finish()
