"""`m1 run`, `m1 ui`, `m1 deploy`: the whole pipeline and its Prefect deployments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML/YAML/JSON pipeline config.")]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", "-s", help="Override one setting, e.g. train.rl_steps=8.")
]


def run(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Run the whole pipeline (curate -> model -> SFT -> CISPO -> eval -> report) as a Prefect flow."""
    from flows.config import load_config
    from flows.pipeline import pipeline, preflight

    cfg = load_config(config, set_ or [])
    preflight(cfg)  # bad inputs fail here, before anything is written
    pipeline(cfg)


def ui(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for the UI and API.")] = 4200,
) -> None:
    """Start the Prefect server and UI (SQLite under PREFECT_HOME by default; PostgreSQL when
    PREFECT_API_DATABASE_CONNECTION_URL points at one)."""
    from flows.deploy import start_server

    start_server(host, port)


def deploy(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    cron: Annotated[
        str | None, typer.Option(help="Schedule for the whole pipeline, e.g. '0 2 * * *'.")
    ] = None,
) -> None:
    """Register the pipeline, curation, training-stage and calibration deployments and serve them, so runs
    can be scheduled and started (with a parameter form) from the Prefect UI."""
    from flows.config import load_config
    from flows.deploy import serve_deployments

    serve_deployments(load_config(config, set_ or []), cron=cron)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("ui")(ui)
    app.command("deploy")(deploy)
