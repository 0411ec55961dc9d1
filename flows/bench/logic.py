"""`m1 bench logic`: instances generated per second for every logic task.

The baseline measured in the same run is each task's easiest level: the table shows the throughput at
the lowest and the highest difficulty, their ratio (what difficulty costs), and how fast the verifier
scores the gold answers of the hardest level.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import print_start
from flows.errors import InputError


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


@app.command("logic")
def bench_logic(
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Instances per task and level.")] = 20,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated task names (default: all).")] = None,
) -> None:
    """Instances generated per second per task, at the easiest and the hardest level."""
    # heavy: networkx (verifiers.logic loads every task); not at m1 start-up
    from verifiers.logic import TASKS

    names = [t.strip() for t in tasks.split(",")] if tasks else sorted(TASKS)
    unknown = [t for t in names if t not in TASKS]
    if unknown:
        raise InputError(f"--tasks: unknown task(s) {', '.join(unknown)}")
    console = Console()
    print_start(console)
    table = Table(title=f"logic task generation, {n} instances per level")
    for col in ("task", "levels", "gen/s easiest", "gen/s hardest", "hard/easy", "verify/s hardest"):
        table.add_column(col, justify="right" if col != "task" else "left")
    for name in names:
        task = TASKS[name]
        lo, hi = task.difficulties[0], task.difficulties[-1]
        start = time.perf_counter()
        for seed in range(n):
            task.generate(lo, seed)
        easy = _rate(n, time.perf_counter() - start)
        start = time.perf_counter()
        hard_instances = [task.generate(hi, seed) for seed in range(n)]
        hard = _rate(n, time.perf_counter() - start)
        start = time.perf_counter()
        for inst in hard_instances:
            task.verify(inst.puzzle, f"<answer>{inst.answer}</answer>")
        verify = _rate(n, time.perf_counter() - start)
        table.add_row(
            name, f"{lo}..{hi}", f"{easy:,.1f}", f"{hard:,.1f}", f"{hard / easy:.3f}x", f"{verify:,.0f}"
        )
    console.print(table)
