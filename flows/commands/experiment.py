"""`m1 experiment ...`: the paper's claims measured in miniature on the real pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown

from flows.errors import InputError
from flows.logs import run_flow
from flows.progress import bars

app = typer.Typer(no_args_is_help=True)


@app.command("algorithms")
def algorithms(
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Folder for steps.csv, summary.json, summary.md, heldout.csv, heldout.png, reward.png.",
        ),
    ],
    quick: Annotated[bool, typer.Option("--quick", help="Seconds-sized run for CI (same outputs).")] = False,
    run: Annotated[
        str | None,
        typer.Option("--run", help="Read {run}-curated and {run}-synlogic from the store if both exist."),
    ] = None,
    seeds: Annotated[int | None, typer.Option(min=1, help="Seeds per arm (default: 3, quick 2).")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="RL steps per run (default: 40, quick 2).")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Runs in parallel (default 2).")] = None,
    arms: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated arms (default: all but the diagnostic cispo+positive-only): sft, rft, "
            "grpo, dapo, cispo, cispo+<option>."
        ),
    ] = None,
    eval_every: Annotated[
        int | None, typer.Option(min=1, help="Held-out evaluation every N steps (default 5, quick 1).")
    ] = None,
    prompts: Annotated[
        int | None, typer.Option(min=1, help="Prompts (groups) per RL step (default 64, quick 2).")
    ] = None,
    updates: Annotated[
        int | None,
        typer.Option(
            min=1, help="Off-policy updates per generation batch (default 16, the paper's; quick 4)."
        ),
    ] = None,
    eval_samples: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Answers per held-out item sampled at temperature 1 at the start and end (mean@k beside "
            "greedy; default 8, quick 2; 0: none).",
        ),
    ] = None,
    as_flow: Annotated[
        bool, typer.Option("--flow", help="Run as a Prefect flow (artifacts in the UI).")
    ] = False,
) -> None:
    """Does RL raise held-out accuracy? SFT continued, rejection sampling, GRPO, DAPO, CISPO and section
    5's options on CISPO, from the same warm start, data and seeds, measured on held-out items.

    Full size (28.5 min on 2 cores): 8 arms x 3 seeds x 40 RL steps of 64 prompts x 8 responses with 16
    off-policy updates of 4 groups per generation batch (the paper's 16), from one shared 1500-step SFT
    warm start. `--arms cispo,dapo --seeds 5` measures the paper's claim with more seeds.
    """
    # heavy: torch, transformers, math_verify; not at m1 start-up
    from flows.experiments import algorithms as lib
    from flows.experiments.arms import select

    console = Console()
    try:
        chosen = select(arms)
    except ValueError as exc:
        raise InputError(f"--arms: {exc}") from None
    if as_flow:
        # heavy: prefect; not at m1 start-up
        from flows.experiments.flow import algorithms_flow

        path = run_flow(
            algorithms_flow,
            str(output),
            quick=quick,
            run=run,
            seeds=seeds or 0,
            steps=steps or 0,
            arms=arms,
            eval_every=eval_every or 0,
            prompts=prompts or 0,
            updates=updates or 0,
            eval_samples=-1 if eval_samples is None else eval_samples,
        )
        console.print(Markdown(Path(path).read_text().split("![")[0]))
        return
    size = lib.size_for(
        quick,
        seeds=seeds,
        steps=steps,
        workers=workers,
        eval_every=eval_every,
        prompts=prompts,
        updates=updates,
        eval_samples=eval_samples,
    )
    console.print(f"size: {size.describe()}", highlight=False)
    with bars(console) as bar:
        task = bar.add_task("preparing", total=None)

        def phase(text: str) -> None:
            bar.update(task, description=text)

        def run_done(result, done: int, total: int) -> None:
            if not console.is_terminal:  # a log file: one line per run instead of a live bar
                console.print(
                    f"run {done}/{total}: {result.arm} seed {result.seed}, {result.seconds:.0f} s",
                    highlight=False,
                )
            bar.update(
                task,
                total=total,
                completed=done,
                description=f"RL runs (last: {result.arm} seed {result.seed})",
            )

        lib.run_experiment(
            output, size, run=run, arms=chosen, progress=lib.Progress(phase=phase, run_done=run_done)
        )
    console.print(Markdown((output / "summary.md").read_text().split("![")[0]))
    files = ", ".join(
        f"{output}/{f}"
        for f in ("steps.csv", "summary.json", "summary.md", "heldout.csv", "heldout.png", "reward.png")
    )
    console.print(f"wrote {files}", highlight=False, soft_wrap=True)
