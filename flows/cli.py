"""`m1`: the command line. Each group lives in flows/commands/<group>.py; benchmarks in flows/bench/.

Heavy libraries (torch, prefect, transformers) are imported inside commands so `m1 --help` stays fast.
User errors (bad files, bad config) print one line and exit with code 2, never a traceback.
"""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console

from flows.bench import app as bench_app
from flows.commands import curate, logic, model, pipeline, serve, train, verify
from flows.errors import M1Error

app = typer.Typer(
    name="m1",
    help="MiniMax-M1 RL pipeline: curate data, score rewards, train with CISPO.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
pipeline.register(app)  # m1 run, m1 ui, m1 deploy
verify.register(app)  # m1 verify, m1 verifiers list
app.add_typer(curate.app, name="curate", help="Data curation steps: clean, dedup, decontaminate, pass rate.")
app.add_typer(logic.app, name="logic", help="SynLogic-style logic tasks: list, generate, calibrate.")
app.add_typer(model.app, name="model", help="The bundled hybrid model: init, export, probes.")
app.add_typer(train.app, name="train", help="Curriculum stages of CISPO training; rerun one stage alone.")
app.add_typer(serve.app, name="serve", help="HTTP services: the reward service, the model.")
app.add_typer(
    bench_app, name="bench", help="Benchmarks; each prints ratios against a baseline run alongside."
)

err = Console(stderr=True)


def _prefect_defaults() -> None:
    """Offline-friendly Prefect defaults; the user's own settings win."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The embedded server shares 2 cores with the work itself: give it time to come up.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def main() -> None:
    _prefect_defaults()
    try:
        app()
    except M1Error as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
