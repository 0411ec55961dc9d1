"""Rich progress bars for training, fed by `flows.train.step_listener` from inside the flows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

console = Console()


@contextmanager
def training_progress(totals: dict[str, int]) -> Iterator[None]:
    """A rich progress bar per phase (SFT warm start, each stage), fed by flows.train.step_listener."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from flows.train import step_listener

    bars: dict[str, int] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:

        def on_step(phase: str, m: dict[str, float]) -> None:
            if phase not in bars:
                bars[phase] = progress.add_task(phase, total=totals.get(phase))
            detail = f"loss {m['loss']:.3f}" if phase == "sft" else f"reward {m['reward_mean']:.3f}"
            progress.update(bars[phase], completed=int(m["step"]), description=f"{phase}  {detail}")

        token = step_listener.set(on_step)
        try:
            yield
        finally:
            step_listener.reset(token)
