"""`m1 run`, `m1 ui`, `m1 deploy`: the whole pipeline and its Prefect deployments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.artifacts import artifact_key
from flows.logs import run_flow
from flows.progress import training_progress

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML/YAML/JSON pipeline config.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override one setting, e.g. train.rl_lr=1e-3 (repeatable)."),
]


def run(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    runner: Annotated[
        str | None, typer.Option(help="local or dask: where the data subflows' tasks run (runner.kind).")
    ] = None,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            "--dry-run",
            help="Print what would be built, trained, evaluated or reused, and why; run nothing.",
        ),
    ] = False,
) -> None:
    """Run the whole DAG as one Prefect flow of subflows: curate -> logic, code, SWE and general tasks
    -> SFT warm start -> pass-rate filter -> every curriculum stage -> evaluation -> report. What was
    built from the same inputs before is reused, so an unchanged rerun builds and trains nothing."""
    # heavy: torch, transformers, prefect; not at m1 start-up
    from flows.config import load_config
    from flows.curate.ingest import describe_mapping
    from flows.curriculum.plan import active_curriculum
    from flows.pipeline import pipeline, preflight

    cfg = load_config(config, list(set_ or []) + ([f"runner.kind={runner}"] if runner else []))
    if plan:
        print_plan(cfg)
        return
    preflight(cfg)  # bad inputs fail here, before anything is written
    curriculum, _ = active_curriculum(cfg, builds_curated=True)
    with training_progress({"sft": cfg.train.sft_steps} | {s.name: s.steps for s in curriculum.stages}):
        state = run_flow(pipeline, cfg, return_state=True)
        result = state.result()  # the flow's own exception, if it failed
    console = Console()
    table = Table(title=f"m1 run {cfg.name}", title_justify="left")
    for col in ("subflow", "dataset", "rows in", "rows out", "quarantined", "this run"):
        table.add_column(col, justify="right" if col.startswith(("rows", "quar")) else "left")
    for s in result["subflows"]:
        table.add_row(
            s["flow"],
            s["dataset"],
            str(s["rows in"]),
            str(s["rows out"]),
            str(s["quarantined"]),
            s["this run"],
        )
    console.print(table)
    for source in result["source_columns"]:
        console.print(
            f"{source['path']}: columns "
            + describe_mapping(
                source["mapping"], source["inferred"], source.get("preset"), source.get("detected", False)
            ),
            highlight=False,
            soft_wrap=True,  # one line per source, whatever the terminal's width
        )
    for note in result["notes"]:
        console.print(f"[dim]{note}[/]")
    console.print(this_run(result), highlight=False, soft_wrap=True)
    for line in result["heldout"]:  # "gain on math: 12/100 -> 20/100 (...)", "no gain on logic: ..."
        console.print(f"held-out {line}", highlight=False, soft_wrap=True)
    console.print(f"report: {result['report']}", highlight=False)
    console.print(ui_hint(state.state_details.flow_run_id, cfg.name), highlight=False, soft_wrap=True)


def this_run(result: dict) -> str:
    """One line: what this run built and trained, and what it reused as it was."""
    built = [s["dataset"] for s in result["subflows"] if s["this run"] == "built"]
    judge = result.get("judge_trained")
    trained = ["the judge"] * bool(judge) + [s["stage"] for s in result["stages"] if not s.get("reused")]
    reused = (
        sum(s["this run"] == "reused" for s in result["subflows"])
        + sum(bool(s.get("reused")) for s in result["stages"])
        + (judge is False)
    )
    if not built and not trained:
        return f"this run: nothing built or trained ({reused} things reused: their inputs are unchanged)"
    return (
        f"this run: built {', '.join(built) or 'no dataset'}; trained {', '.join(trained) or 'no stage'}; "
        f"{reused} things reused"
    )


def print_plan(cfg) -> None:
    """`m1 run --plan`: a table of what would run and why (flows/run_plan.py)."""
    # heavy: torch, transformers, polars; not at m1 start-up
    from flows.run_plan import run_plan

    table = Table(title=f"m1 run {cfg.name}: plan (nothing runs)", title_justify="left")
    for col in ("thing", "action", "why"):
        table.add_column(col)
    colour = {"reuse": "green", "skip": "dim", "maybe": "yellow"}
    for step in run_plan(cfg):
        action = (
            f"[{colour[step.action]}]{step.action}[/]" if step.action in colour else f"[bold]{step.action}[/]"
        )
        table.add_row(step.thing, action, step.why)
    Console().print(table, soft_wrap=True)


def ui_hint(flow_run_id, name: str) -> str:
    """Where a finished run is in the Prefect UI: on the server runs report to, if one is configured;
    else on the one `m1 ui` starts over the database the run's temporary server wrote."""
    # heavy: prefect; not at m1 start-up
    from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

    page = f"/runs/flow-run/{flow_run_id}"
    what = f"the run's subflows, and the report as artifact {artifact_key('run-report', name)}"
    if api := PREFECT_API_URL.value():
        ui = (PREFECT_UI_URL.value() or api.removesuffix("/api")).rstrip("/")
        return f"Prefect UI: open {ui}{page}: {what}"
    return f"Prefect UI: start it with `m1 ui`, then open http://127.0.0.1:4200{page}: {what}"


def ui(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for the UI and API.")] = 4200,
    database: Annotated[
        str | None,
        typer.Option(
            envvar=["PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL"],
            show_envvar=False,
            help="The server's database: postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB "
            "(or PREFECT_API_DATABASE_CONNECTION_URL). Default: SQLite under PREFECT_HOME.",
        ),
    ] = None,
) -> None:
    """Start the Prefect server and UI (SQLite under PREFECT_HOME by default; PostgreSQL with --database,
    for runs from many workers and machines)."""
    # heavy: pydantic; not at m1 start-up
    from flows.deploy import start_server

    start_server(host, port, database)


def deploy(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    cron: Annotated[
        str | None, typer.Option(help="Schedule for the whole pipeline, e.g. '0 2 * * *'.")
    ] = None,
) -> None:
    """Register the pipeline, curation, training-stage and calibration deployments and serve them, so runs
    can be scheduled and started (with a parameter form) from the Prefect UI."""
    # heavy: pydantic; not at m1 start-up
    from flows.config import load_config
    from flows.deploy import serve_deployments

    serve_deployments(load_config(config, set_ or []), cron=cron)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("ui")(ui)
    app.command("deploy")(deploy)
