"""Progress reporting: one callback type, `ProgressFn`, with a rich adapter (a bar of the CLI) and a Prefect
adapter (a progress artifact of the flow run, shown in the UI).

Libraries that take long report ``(done, total)`` in their own units (steps, tasks, rounds) through a plain
callable and know nothing of either display; the commands and the flows pick the adapter. Every CLI bar has
the same columns (`bars`), and `training_progress` feeds one bar per training phase from inside the flows
(through `step_listener`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()

# The CLI sets this to drive a rich bar per training phase; the training flows (flows/train.py) report each
# step to it, with the phase and the step's metrics (flow bodies run in the caller's context).
step_listener: contextvars.ContextVar[Callable[[str, dict[str, float]], None] | None] = (
    contextvars.ContextVar("step_listener", default=None)
)


class ProgressFn(Protocol):
    def __call__(self, done: float, total: float | None, description: str | None = None) -> None:
        """``done`` units of ``total`` (None: not known yet), with a new description when one is given."""


def prefect_progress(description: str, *, key: str | None = None, every: int = 1) -> ProgressFn:
    """A Prefect progress artifact of the current flow run, created now at 0 %; each report sets it to
    ``done / total`` (capped at 100 %), on every ``every``-th unit and the last one."""
    # heavy: prefect; not at m1 start-up
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    artifact = create_progress_artifact(0.0, key=key, description=description)

    def report(done: float, total: float | None, description: str | None = None) -> None:
        total = total or 0
        if int(done) % every == 0 or done >= total:
            update_progress_artifact(
                artifact, 100.0 * min(done, total) / max(total, 1), description=description
            )

    return report


def rich_progress(bar, description: str, total: float | None = None) -> ProgressFn:
    """A new task of a rich Progress (`bars`); each report moves it to ``done`` of ``total``."""
    task = bar.add_task(description, total=total)

    def report(done: float, total: float | None, description: str | None = None) -> None:
        bar.update(task, completed=done, total=total, **({"description": description} if description else {}))

    return report


def bars(out: Console | None = None, *, transient: bool = False):
    """A rich Progress with the CLI's columns: description, bar, done/total, elapsed."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=out or console, transient=transient)


@contextmanager
def training_progress(totals: dict[str, int]) -> Iterator[None]:
    """A rich progress bar per phase (SFT warm start, each stage), fed by `step_listener`."""
    phases: dict[str, ProgressFn] = {}
    with bars() as progress:

        def on_step(phase: str, m: dict[str, float]) -> None:
            if phase not in phases:
                phases[phase] = rich_progress(progress, phase, totals.get(phase))
            detail = f"loss {m['loss']:.3f}" if phase == "sft" else f"reward {m['reward_mean']:.3f}"
            phases[phase](int(m["step"]), totals.get(phase), f"{phase}  {detail}")

        token = step_listener.set(on_step)
        try:
            yield
        finally:
            step_listener.reset(token)
