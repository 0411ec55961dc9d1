"""`m1 logic ...`: list the SynLogic-style tasks, generate items, calibrate difficulty bands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.atomic import atomic_path
from flows.errors import InputError
from flows.logs import run_flow
from flows.progress import bars

app = typer.Typer(no_args_is_help=True)


def instance_seed(seed: int, index: int) -> int:
    """Seed of the index-th instance of a batch: batches with different --seed never share instances."""
    return seed * 1_000_000 + index


def _task(name: str):
    # heavy: networkx (verifiers.logic loads every task); not at m1 start-up
    from verifiers.logic import get_task

    try:
        return get_task(name)
    except (KeyError, ImportError) as exc:
        raise InputError(f"--task: {exc.args[0] if exc.args else exc}") from None


@app.command("list")
def list_tasks(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every logic task: name, difficulty range, description (and import errors of broken task modules);
    with reasoning-gym installed (extra `logic`), its datasets as `rg_<name>` too."""
    # heavy: networkx (verifiers.logic loads every task); not at m1 start-up
    from verifiers.logic import LOAD_ERRORS, TASKS
    from verifiers.logic.reasoning_gym_adapter import available, not_offered, reasoning_gym_task

    tasks = [(t, "built-in") for t in TASKS.values()] + [
        (reasoning_gym_task(name), "reasoning-gym") for name in available()
    ]
    rows = [
        {
            "name": t.name,
            "source": source,
            "min_difficulty": t.difficulties[0],
            "max_difficulty": t.difficulties[-1],
            "levels": {str(d): text for d, text in sorted(t.levels.items())},
            "description": t.description,
        }
        for t, source in tasks
    ]
    if as_json:
        typer.echo(
            json.dumps({"tasks": rows, "load_errors": LOAD_ERRORS, "not_offered": not_offered()}, indent=2)
        )
        return
    table = Table(title=f"{len(rows)} logic tasks")
    for col in ("name", "source", "difficulty", "description"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(
            row["name"],
            row["source"],
            _levels(sorted(int(d) for d in row["levels"])),
            row["description"],
        )
    console = Console()
    console.print(table)
    for module, error in LOAD_ERRORS.items():
        console.print(f"[red]task module {module} failed to import: {error}[/]", highlight=False)
    for name, why in not_offered().items():
        console.print(f"[dim]reasoning-gym's {name} is not offered: {why}[/]", highlight=False)


def _levels(levels: list[int]) -> str:
    """ "1..5" for a run of levels, else each one: "1, 2, 4"."""
    if levels == list(range(levels[0], levels[-1] + 1)):
        return f"{levels[0]}..{levels[-1]}"
    return ", ".join(map(str, levels))


@app.command("generate")
def generate(
    task: Annotated[str, typer.Option("--task", "-t", help="Task name (see `m1 logic list`).")],
    difficulty: Annotated[int, typer.Option("--difficulty", "-d", help="Difficulty level of the task.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL file of canonical RL items.")],
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Number of instances.")] = 100,
    seed: Annotated[int, typer.Option("--seed", "-s", min=0, help="Batch seed: same seed, same bytes.")] = 0,
) -> None:
    """Generate N instances as canonical RL items (the same seed gives byte-identical output)."""
    logic_task = _task(task)
    if difficulty not in logic_task.levels:
        raise InputError(f"--difficulty {difficulty}: {task} has levels {_levels(logic_task.difficulties)}")
    console = Console(stderr=True)
    with (
        atomic_path(output) as tmp,
        tmp.open("w", encoding="utf-8") as out,
        bars(console, transient=True) as progress,
    ):
        bar = progress.add_task(f"{task} d{difficulty}", total=n)
        for i in range(n):
            inst = _generate(logic_task, difficulty, instance_seed(seed, i))
            out.write(json.dumps(inst.to_item(i), ensure_ascii=False) + "\n")
            progress.advance(bar)
    console.print(f"[bold]{output}[/]: {n} {task} items at difficulty {difficulty}", highlight=False)


def _generate(task, difficulty: int, seed: int):
    """One instance; a generator's failure is one line naming the task, the level and the seed (the
    output file is left as it was)."""
    try:
        return task.generate(difficulty, seed)
    except Exception as exc:  # noqa: BLE001 - any generator bug, reported as the user's one line
        said = str(exc).strip().splitlines()
        raise GenerationFailed(
            f"{task.name} at difficulty {difficulty}: the generator failed on seed {seed}: "
            f"{type(exc).__name__}{': ' + said[0] if said else ''}"
        ) from exc


class GenerationFailed(InputError):
    """A task's generator raised: not the user's input, but reported as one line all the same."""


@app.command("calibrate")
def calibrate(
    endpoint: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    ] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the endpoint.")] = "default",
    checkpoint: Annotated[
        Path | None, typer.Option(help="m1model checkpoint folder (instead of --endpoint).")
    ] = None,
    k: Annotated[int, typer.Option(min=1, help="Samples per instance (pass@k).")] = 4,
    instances: Annotated[int, typer.Option(min=1, help="Instances per task and difficulty.")] = 4,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated task names (default: all).")] = None,
    difficulties: Annotated[
        str | None, typer.Option(help="Comma-separated levels (default: every level).")
    ] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Generation budget per sample.")] = 2048,
    temperature: Annotated[float, typer.Option(min=0.0)] = 1.0,
    seed: Annotated[int, typer.Option(min=0)] = 0,
) -> None:
    """Estimate pass@k per task and difficulty for a policy and store each task's training band."""
    # heavy: prefect, polars; not at m1 start-up
    from flows.config import EndpointConfig, PolicyConfig
    from flows.logic_calibration import CalibrationParams, logic_calibration

    if (endpoint is None) == (checkpoint is None):
        raise InputError("give exactly one of --endpoint or --checkpoint")
    if checkpoint is not None and not (checkpoint / "config.json").is_file():
        raise InputError(f"{checkpoint}: not a checkpoint folder (no config.json)")
    names = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    for name in names or []:
        _task(name)
    try:
        levels = [int(d) for d in difficulties.split(",") if d.strip()] if difficulties else None
    except ValueError:
        raise InputError(f"--difficulties {difficulties!r}: expected comma-separated integers") from None
    policy = PolicyConfig(
        endpoint=EndpointConfig(url=endpoint, model=model),
        checkpoint=str(checkpoint) if checkpoint else None,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    result = run_flow(
        logic_calibration,
        policy,
        CalibrationParams(tasks=names, difficulties=levels, k=k, instances=instances, seed=seed),
    )
    table = Table(title="training bands")
    for col in ("task", "band", "why"):
        table.add_column(col)
    for name, band in sorted(result["bands"].items()):
        table.add_row(
            name, f"{band['low']}..{band['high']}" if band["low"] is not None else "-", band["reason"]
        )
    Console().print(table)
    Console().print(f"bands: {result['bands_path']}\nheat map: {result['heatmap_path']}", highlight=False)
