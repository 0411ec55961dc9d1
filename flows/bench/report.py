"""`m1 bench report`: each bench's latest figures beside the previous commit's on the same machine, with every
figure that moved beyond its own run-to-run spread marked; `m1 bench readme`: the README's benchmark table,
written from the same history.

The latest figure of a code version is the median of its runs; its spread and what counts as moved are
flows/bench/history.py's. A version run once has no spread of its own: the spread then comes from the
earlier versions that ran more than once, and a figure whose bench never ran twice on the machine has
none ("?": run the bench again at the same commit to measure it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import bench_names, tool
from flows.bench.capture import machine, machine_key
from flows.bench.headlines import headlines
from flows.bench.history import HISTORY, Group, change, groups, history_dir, read, recorded_benches, select
from flows.errors import InputError

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN = re.compile(r"^<!-- bench-table machine=\"(?P<machine>[^\"]+)\".*-->$", re.MULTILINE)
END = "<!-- /bench-table -->"


def fmt(value: float | None, like: str | None) -> str:
    """A median printed the way the bench printed the figure (a ratio with x, a share with %)."""
    if value is None:
        return "-"
    like = (like or "").strip()
    if like.endswith("%"):
        return f"{value:.1%}"
    if like.endswith("x") or like.endswith("x less"):
        return f"{value:.2f}x"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def machines_of(records: list[dict]) -> list[str]:
    return sorted({machine_key(r.get("machine", {})) for r in records})


def pick_machines(records: list[dict], wanted: str | None) -> list[str]:
    """The machines to report: this one by default, every one for 'all', else those whose key holds `wanted`."""
    known = machines_of(records)
    if wanted == "all":
        return known
    if wanted is None:
        return [machine_key(machine())]
    return [m for m in known if wanted.lower() in m.lower()]


def load_range(group: Group) -> str:
    loads = group.others_load()
    if not loads:
        return "?"
    return f"{min(loads):.2f}" if len(loads) == 1 else f"{min(loads):.2f}-{max(loads):.2f}"


def bench_table(bench: str, history: list[Group], everything: bool) -> tuple[Table, int]:
    """The latest version's figures beside the previous version's; (table, figures that moved)."""
    latest = history[-1]
    previous = history[-2] if len(history) > 1 else None
    marked = {h.figure: h for h in headlines(bench, latest)}
    table = Table(
        title=f"{bench}: {latest.version} ({len(latest.records)} run(s), others' load {load_range(latest)} cores)"
        + (
            f" vs {previous.version} ({len(previous.records)} run(s), {load_range(previous)})"
            if previous
            else ", no earlier version"
        ),
        title_justify="left",
    )
    for col in ("figure", "previous", "latest", "change", "spread", "moved", "goal"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    moved = 0
    names = [f for f in marked if f in latest.figures] + [f for f in latest.figures if f not in marked]
    for name in names:
        c = change(history, name)
        if c.moved:
            moved += 1
        shown = everything or name in marked or (latest.is_ratio(name) and c.moved)
        if not shown:
            continue
        like = latest.text(name)
        goal = ""
        if name in marked and marked[name].goal:
            ok = marked[name].met(c.latest)
            goal = f"{marked[name].goal} {'met' if ok else 'not met' if ok is not None else ''}".strip()
        table.add_row(
            marked[name].label if name in marked else name,
            fmt(c.previous, like),
            fmt(c.latest, like) if c.latest is not None else (like or "-"),
            f"{c.relative:+.1%}" if c.relative is not None else "-",
            f"{c.spread:.1%}" if c.spread is not None else "?",
            "[bold red]moved[/]" if c.moved else ("?" if c.moved is None else ""),
            goal,
        )
    return table, moved


@tool("report")
def bench_report(
    names: Annotated[
        list[str] | None, typer.Argument(help="Benches (default: every bench with history).")
    ] = None,
    machine_name: Annotated[
        str | None,
        typer.Option("--machine", help="Part of a machine's name, or 'all' (default: this machine)."),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Every figure, not only headlines and moves.")
    ] = False,
    fail_on_move: Annotated[bool, typer.Option(help="Exit 1 when a figure moved beyond its spread.")] = False,
) -> None:
    """Each bench's latest figures beside the previous commit's on the same machine; moves beyond the
    bench's own run-to-run spread are marked."""
    console = Console()
    folder = history_dir() or HISTORY
    benches = names or recorded_benches(folder)
    if not benches:
        raise InputError(f"no bench history in {folder}: run `m1 bench NAME` first")
    moved_total = 0
    for bench in benches:
        records = read(bench, folder)
        targets = pick_machines(records, machine_name)
        if not any(machine_key(r.get("machine", {})) in targets for r in records):
            console.print(
                f"{bench}: no run on {', '.join(targets) or machine_name}; runs exist on: "
                f"{'; '.join(machines_of(records)) or 'none'}",
                highlight=False,
            )
            continue
        for key in targets:
            last = sorted(
                (r for r in records if machine_key(r.get("machine", {})) == key), key=lambda r: r["date"]
            )
            if last and last[-1].get("status") != "ok":
                console.print(
                    f"[bold red]{bench}: the latest run ({last[-1]['commit'][:7]}, {last[-1]['date']}) "
                    f"failed:[/] {last[-1].get('status')}",
                    highlight=False,
                )
            for options, runs in select(records, key).items():
                history = groups(runs)
                table, moved = bench_table(bench, history, everything)
                moved_total += moved
                console.print(f"[dim]{key}{'; options ' + options if options != '{}' else ''}[/]")
                console.print(table)
    if fail_on_move and moved_total:
        raise typer.Exit(1)


def readme_table(folder: Path, key: str) -> str:
    """The README's benchmark table: each bench's headlines at its latest version on machine `key`, with
    the options of its latest run there (the median of that version's runs, their number, the others'
    load, and the options where they are not the defaults)."""
    lines = [
        f"Measured on {key} (the median of each bench's latest commit's runs there, their range where it ran "
        "more than once):",
        "",
        "| bench | figure | value | goal | runs | commit, date | others' load (cores) |",
        "|---|---|---|---|---|---|---|",
    ]
    for bench in [*bench_names(), *[b for b in recorded_benches(folder) if b not in bench_names()]]:
        # the options of the latest run that has the bench's headlines (a one-time run with other options,
        # `m1 bench dedup --runner dask --docs 20000000`, measures other figures)
        latests = ((options, groups(runs)[-1]) for options, runs in select(read(bench, folder), key).items())
        found = next(
            ((o, g) for o, g in latests if any(g.text(h.figure) is not None for h in headlines(bench, g))),
            None,
        )
        if found is None:
            continue
        options, latest = found
        name = f"`{bench}`" + (f" ({_options(options)})" if options != "{}" else "")
        for h in headlines(bench, latest):
            value = latest.median(h.figure)
            if value is None and latest.text(h.figure) is None:
                continue
            ok = h.met(value)
            goal = f"{h.goal}{' (met)' if ok else ' (not met)' if ok is not None else ''}" if h.goal else ""
            shown = fmt(value, latest.text(h.figure)) if value is not None else latest.text(h.figure)
            values = latest.values(h.figure)
            like = latest.text(h.figure)
            if len(values) > 1 and fmt(min(values), like) != fmt(max(values), like):
                shown += f" ({fmt(min(values), like)}-{fmt(max(values), like)})"
            date = max(r["date"] for r in latest.records)[:10]
            lines.append(
                f"| {name} | {_cell(h.label)} | {shown} | {goal} | {len(latest.records)} | "
                f"{latest.version}, {date} | {load_range(latest)} |"
            )
    return "\n".join(lines)


def _options(options: str) -> str:
    given = json.loads(options)
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_readme(text: str, folder: Path) -> str:
    """README text with its bench-table section regenerated from the history in `folder`."""
    begin = BEGIN.search(text)
    end = text.find(END, begin.end()) if begin else -1
    if not begin or end < 0:
        raise InputError(f'README has no `<!-- bench-table machine="..." -->` ... `{END}` section')
    table = readme_table(folder, begin.group("machine"))
    return text[: begin.end()] + "\n" + table + "\n" + text[end:]


@tool("readme")
def bench_readme(
    check: Annotated[
        bool, typer.Option(help="Exit 1 if the README's table differs from the history.")
    ] = False,
    readme: Annotated[Path, typer.Option(help="The README to write.")] = README,
) -> None:
    """Write the README's benchmark table from the history (the machine its section names)."""
    folder = history_dir() or HISTORY
    text = readme.read_text()
    new = render_readme(text, folder)
    if check:
        if new != text:
            Console().print(f"{readme}: the benchmark table differs from {folder}; run `m1 bench readme`")
            raise typer.Exit(1)
        return
    if new != text:
        readme.write_text(new)
    Console().print(f"{readme}: benchmark table from {folder}", highlight=False)
