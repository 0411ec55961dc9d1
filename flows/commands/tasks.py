"""`m1 tasks logic`, `m1 tasks code`: write the run's task datasets (the flows of flows/tasks/)."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from flows.commands.pipeline import ConfigOpt, SetOpt
from flows.logs import run_flow

app = typer.Typer(no_args_is_help=True)


def show(out: dict[str, Any], what: str) -> None:
    """What was written: rows per task and difficulty, then the steps and the notes."""
    m = out["manifest"]
    console = Console()
    table = Table(title=f"{m['name']}@v{m['version']}: {m['rows']} items, {m['quarantined']} quarantined")
    for col in (what, "difficulty", "rows"):
        table.add_column(col, justify="left" if col == what else "right")
    for row in out["mixture"]:
        table.add_row(row["task"], str(row["difficulty"]), str(row["rows"]))
    console.print(table)
    steps = Table(title="steps")
    for col in ("step", "in", "out", "why"):
        steps.add_column(col, justify="left" if col in ("step", "why") else "right")
    for s in m["steps"]:
        steps.add_row(s["step"], str(s["rows_in"]), str(s["rows_out"]), s["reason"])
    console.print(steps)
    for note in out["notes"]:
        console.print(f"- {note}", highlight=False)
    if out.get("reused"):
        console.print(
            f"unchanged: built from the same inputs before (built because: {out['built_because']}); nothing ran",
            highlight=False,
            soft_wrap=True,
        )
        return
    cached = sum(state == "Cached" for _, state in out["tasks"])
    console.print(
        f"built because: {out['built_because']}; {cached} of {len(out['tasks'])} tasks resumed from cache",
        highlight=False,
        soft_wrap=True,
    )


@app.command("logic")
def logic(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Write {run}-synlogic: logic puzzles at the calibrated (or default) difficulty bands, exact
    duplicates removed, each gold answer checked by the logic verifier; nothing runs when its inputs
    are those it was built from."""
    # heavy: prefect, math_verify, polars; not at m1 start-up
    from flows.config import load_config
    from flows.tasks.logic import logic_tasks, preflight

    cfg = load_config(config, set_ or [])
    preflight(cfg)  # bad tasks or bands fail here, before anything is written
    show(run_flow(logic_tasks, cfg), "task")


@app.command("code")
def code(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Write {run}-code: generated programming problems whose test suites come from running the
    reference solutions in the sandbox (stdin/stdout and function-call styles); nothing runs when its
    inputs are those it was built from."""
    # heavy: prefect, math_verify, polars; not at m1 start-up
    from flows.config import load_config
    from flows.tasks.code import code_tasks, preflight

    cfg = load_config(config, set_ or [])
    preflight(cfg)
    show(run_flow(code_tasks, cfg), "family")
