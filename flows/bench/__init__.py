"""`m1 bench <name>`: every module in this package registers its benchmark on `app`.

A benchmark measures its baseline in the same run and prints ratios, never absolute targets. Every
benchmark registered here is recorded: `recorded` wraps each command so that its run appends a record
(commit, machine, threads, others' load, the figures of every table it printed) to its history
(flows/bench/history.py). Commands that are tools over the history, not benchmarks (`m1 bench report`,
`compare`, `readme`), register through `tool` instead and are left alone.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable

import typer

from flows.bench.capture import arguments, recording
from flows.bench.history import ROOT, append, history_dir

app = typer.Typer(no_args_is_help=True)
_TOOL = "__m1_bench_tool__"


def tool(name: str, **kwargs) -> Callable:
    """Register a command of `m1 bench` that is not a benchmark (it gets no history of its own)."""

    def register(fn: Callable) -> Callable:
        setattr(fn, _TOOL, True)
        return app.command(name, **kwargs)(fn)

    return register


def bench_names() -> list[str]:
    """The benchmarks `m1 bench` knows, in registration order."""
    return [_name(info) for info in app.registered_commands if not getattr(info.callback, _TOOL, False)]


def _name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def recorded(name: str, command: Callable) -> Callable:
    """`command` that appends its run's record to the history (when M1_BENCH_HISTORY is not `off`)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        folder = history_dir()
        if folder is None:
            return command(*args, **kwargs)
        given, params = arguments(command, kwargs)
        record: dict = {}
        try:
            with recording(name, ROOT, given, params) as record:
                return command(*args, **kwargs)
        finally:
            if record.get("status") is not None and not record["status"].startswith("error: InputError"):
                append(record, folder)

    return run


@tool("list")
def bench_list() -> None:
    """Print the benchmarks' names, one a line (`make bench` runs them all)."""
    typer.echo("\n".join(bench_names()))


for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")

for _info in app.registered_commands:
    if not getattr(_info.callback, _TOOL, False):
        _info.callback = recorded(_name(_info), _info.callback)
