"""`m1 train ...`: run one curriculum stage (alone, from the previous stage's final model), the whole
curriculum, or list the stages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.commands.pipeline import ConfigOpt, SetOpt

app = typer.Typer(no_args_is_help=True)
console = Console()

CurriculumOpt = Annotated[
    str | None,
    typer.Option("--curriculum", help="Bundled curriculum name or TOML path (default: train.curriculum)."),
]
RestartOpt = Annotated[
    bool,
    typer.Option("--restart", help="Discard the stage's own checkpoints and train it again from the start."),
]


def _config(config: Path | None, set_: list[str] | None, curriculum: str | None):
    from flows.config import load_config

    overrides = list(set_ or []) + ([f"train.curriculum={curriculum}"] if curriculum else [])
    return load_config(config, overrides)


@contextmanager
def _progress(totals: dict[str, int]) -> Iterator[None]:
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


def _summary(rows: list[dict]) -> None:
    table = Table(title="training stages")
    for col in ("stage", "steps", "reward first", "reward last", "final model"):
        table.add_column(col)
    for r in rows:
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        table.add_row(r["stage"], str(r["steps"]), fmt(r["reward_first"]), fmt(r["reward_last"]), r["final"])
    console.print(table)


@app.command("stage")
def stage(
    name: Annotated[str, typer.Argument(help="Stage name (see `m1 train list-stages`).")],
    config: ConfigOpt = None,
    set_: SetOpt = None,
    curriculum: CurriculumOpt = None,
    restart: RestartOpt = False,
) -> None:
    """Run one stage alone as a flow run: it resumes from its own newest checkpoint, or starts from the
    previous stage's final model."""
    from flows.curriculum import load_curriculum

    cfg = _config(config, set_, curriculum)
    cur = load_curriculum(cfg.train.curriculum)
    steps = cur.stages[cur.index(name)].steps  # an unknown stage fails here, before any work
    from flows.train import train_stage  # torch, prefect: only once there is work to do

    with _progress({"sft": cfg.train.sft_steps, name: steps}):
        result = train_stage(name, cfg, restart=restart)
    _summary([result])


@app.command("curriculum")
def curriculum_cmd(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    curriculum: CurriculumOpt = None,
    restart: RestartOpt = False,
) -> None:
    """Run every stage in order (each a subflow), each from the previous stage's final model."""
    from flows.curriculum import load_curriculum
    from flows.train import train_curriculum

    cfg = _config(config, set_, curriculum)
    cur = load_curriculum(cfg.train.curriculum)
    with _progress({"sft": cfg.train.sft_steps} | {s.name: s.steps for s in cur.stages}):
        results = train_curriculum(cfg, restart=restart)
    _summary(results)


@app.command("list-stages")
def list_stages(config: ConfigOpt = None, set_: SetOpt = None, curriculum: CurriculumOpt = None) -> None:
    """Show the curriculum's stages: mixture, generation window, budget, overrides, where each starts."""
    from flows.curriculum import load_curriculum
    from flows.curriculum.layout import stage_paths

    cfg = _config(config, set_, curriculum)
    cur = load_curriculum(cfg.train.curriculum)
    table = Table(title=f"curriculum {cur.name}: {cur.description}", title_justify="left")
    for col in ("#", "stage", "mixture", "new tokens", "steps", "overrides", "starts from", "done"):
        table.add_column(col)
    for i, s in enumerate(cur.stages):
        window = (
            str(s.max_new_tokens) if s.min_new_tokens is None else f"{s.min_new_tokens}..{s.max_new_tokens}"
        )
        start = cur.stages[i - 1].name if i else (cfg.train.init_from or "base (SFT warm start)")
        done = "yes" if (stage_paths(cfg, s.name).final / "config.json").exists() else ""
        table.add_row(
            str(i + 1),
            s.name,
            ", ".join(f"{k} {w:g}" for k, w in s.mixture.items()),
            window,
            str(s.steps),
            ", ".join(f"{k}={v}" for k, v in s.overrides.items()),
            start,
            done,
        )
    console.print(table)
    console.print(f"datasets: {', '.join(cur.dataset_names(cfg.name))}")
