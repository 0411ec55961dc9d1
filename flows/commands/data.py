"""`m1 data ...`: what the dataset store under M1_HOME holds: datasets, versions, manifests, rows."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True)
console = Console()


@app.command("list")
def list_datasets(
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per dataset, for scripts.")] = False,
) -> None:
    """Every dataset in the store with its latest version, rows, quarantined rows and parents."""
    # heavy: polars; not at m1 start-up
    from flows.store import DatasetStore

    store = DatasetStore()
    rows = []
    for name in store.names():
        m = store.manifest(name)
        rows.append(
            {
                "name": name,
                "version": m.version,
                "versions": store.versions(name),
                "rows": m.rows,
                "quarantined": m.quarantined,
                "created": m.created,
                "parents": m.parents,
            }
        )
    if json_:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"datasets in {store.datasets}", title_justify="left")
    for col in ("dataset", "latest", "versions", "rows", "quarantined", "created", "parents"):
        table.add_column(
            col, justify="right" if col in ("rows", "quarantined") else "left", no_wrap=col == "dataset"
        )
    for r in rows:
        table.add_row(
            r["name"],
            f"v{r['version']}",
            str(len(r["versions"])),
            str(r["rows"]),
            str(r["quarantined"]),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created"])),
            ", ".join(r["parents"]),
        )
    console.print(table if rows else f"no datasets in {store.datasets} yet (`m1 run` or `m1 curate run`)")


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Dataset name (see `m1 data list`).")],
    version: Annotated[int | None, typer.Option(help="Version (default: the latest).")] = None,
    quarantine: Annotated[
        bool, typer.Option("--quarantine", help="Show the rows the steps rejected, with their reasons.")
    ] = False,
    rows: Annotated[int, typer.Option(min=0, help="Rows to print.")] = 10,
) -> None:
    """A dataset version's manifest (steps with rows in/out, parents, parameters) and its first rows."""
    # heavy: polars; not at m1 start-up
    import polars as pl

    from flows.store import DatasetStore

    store = DatasetStore()
    m = store.manifest(name, version)
    console.print(
        f"[bold]{m.ref}[/]: {m.rows} rows, {m.quarantined} quarantined, code {m.code_version}",
        highlight=False,
    )
    if m.parents:
        console.print(f"parents: {', '.join(m.parents)}", highlight=False)
    if m.steps:
        steps = Table(title="steps", title_justify="left")
        for col in ("step", "in", "out", "removed", "why"):
            steps.add_column(col, justify="right" if col in ("in", "out", "removed") else "left")
        for s in m.steps:
            steps.add_row(s.step, str(s.rows_in), str(s.rows_out), str(s.removed), s.reason)
        console.print(steps)
    frame = store.quarantine(name, m.version) if quarantine else store.read(name, m.version)
    if frame is None or frame.height == 0:
        console.print("no quarantined rows" if quarantine else "no rows")
        return
    shown = frame.head(rows).with_columns(pl.all().cast(pl.String).str.slice(0, 80))
    table = Table(
        title=f"{'quarantine' if quarantine else 'rows'} ({frame.height} in all)", title_justify="left"
    )
    for col in shown.columns:
        table.add_column(col, overflow="fold")
    for row in shown.iter_rows():
        table.add_row(*["" if v is None else v for v in row])
    console.print(table)
