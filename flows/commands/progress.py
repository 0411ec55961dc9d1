"""Rich progress bars for the CLI: one layout for every command, and the training bars fed by
`flows.train.step_listener` from inside the flows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

console = Console()


def bars(out: Console | None = None, *, transient: bool = False):
    """A rich Progress with the CLI's columns: description, bar, done/total, elapsed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=out or console, transient=transient)


@contextmanager
def training_progress(totals: dict[str, int]) -> Iterator[None]:
    """A rich progress bar per phase (SFT warm start, each stage), fed by flows.train.step_listener."""
    from flows.train import step_listener

    phases: dict[str, int] = {}
    with bars() as progress:

        def on_step(phase: str, m: dict[str, float]) -> None:
            if phase not in phases:
                phases[phase] = progress.add_task(phase, total=totals.get(phase))
            detail = f"loss {m['loss']:.3f}" if phase == "sft" else f"reward {m['reward_mean']:.3f}"
            progress.update(phases[phase], completed=int(m["step"]), description=f"{phase}  {detail}")

        token = step_listener.set(on_step)
        try:
            yield
        finally:
            step_listener.reset(token)
