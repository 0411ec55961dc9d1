"""The experiments as Prefect flows: the same library call as the CLI, with progress and the summary as
artifacts in the UI."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact

from flows.experiments.algorithms import Progress, run_experiment, size_for
from flows.experiments.arms import select


@flow(name="experiment-algorithms", log_prints=True)
def algorithms_flow(
    output: str,
    quick: bool = False,
    run: str | None = None,
    home: str | None = None,
    seeds: int = 0,
    steps: int = 0,
    arms: str | None = None,
    eval_every: int = 0,
    prompts: int = 0,
    updates: int = 0,
    eval_samples: int = -1,
) -> str:
    """SFT continued, RFT, GRPO, DAPO, CISPO (+ section 5 options) from one warm start, on held-out
    accuracy: writes OUTPUT/{steps.csv,summary.json,summary.md,heldout.csv,heldout.png,reward.png}."""

    logger = get_run_logger()
    artifact = create_progress_artifact(0.0, description="algorithms experiment: RL runs done")

    def run_done(result, done: int, total: int) -> None:
        update_progress_artifact(artifact, progress=100.0 * done / total)
        logger.info(
            "run %d/%d done: %s seed %d, %.0f s", done, total, result.arm, result.seed, result.seconds
        )

    size = size_for(
        quick,
        seeds=seeds or None,
        steps=steps or None,
        eval_every=eval_every or None,
        prompts=prompts or None,
        updates=updates or None,
        eval_samples=None if eval_samples < 0 else eval_samples,  # -1: the size's default; 0: none
    )
    text = run_experiment(
        Path(output),
        size,
        run=run,
        home=home,
        arms=select(arms),
        progress=Progress(phase=logger.info, run_done=run_done),
    )
    create_markdown_artifact(
        text, key="experiment-algorithms", description="does RL learn; CISPO vs DAPO vs GRPO"
    )
    return str(Path(output) / "summary.md")
