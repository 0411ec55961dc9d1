"""`m1 train ...`: run one curriculum stage (alone, from the previous stage's final model), the whole
curriculum, or list the stages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.commands.pipeline import ConfigOpt, SetOpt
from flows.logs import run_flow
from flows.progress import training_progress

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
NprocOpt = Annotated[
    int | None,
    typer.Option(
        "--nproc",
        min=1,
        help="Training processes (default: train.nproc). Above 1: data parallel under torchrun, "
        "gloo on CPU, nccl on GPUs.",
    ),
]


def _config(config: Path | None, set_: list[str] | None, curriculum: str | None, nproc: int | None = None):
    # heavy: pydantic; not at m1 start-up
    from flows.config import load_config

    overrides = list(set_ or []) + ([f"train.curriculum={curriculum}"] if curriculum else [])
    overrides += [f"train.nproc={nproc}"] if nproc is not None else []
    return load_config(config, overrides)


def _summary(rows: list[dict]) -> None:
    table = Table(title="training stages")
    for col in (
        "stage",
        "steps",
        "reward first",
        "reward last",
        "held-out start",
        "held-out end",
        "final model",
    ):
        table.add_column(col)
    for r in rows:
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        pct = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
        table.add_row(
            r["stage"],
            str(r["steps"]),
            fmt(r["reward_first"]),
            fmt(r["reward_last"]),
            pct(r["val_start"]),
            pct(r["val_end"]),
            r["final"],
        )
    console.print(table)
    for r in rows:
        for warning in r.get("warnings", []):
            console.print(f"[yellow]warning[/] stage {r['stage']}: {warning}")


@app.command("stage")
def stage(
    name: Annotated[str, typer.Argument(help="Stage name (see `m1 train list-stages`).")],
    config: ConfigOpt = None,
    set_: SetOpt = None,
    curriculum: CurriculumOpt = None,
    restart: RestartOpt = False,
    nproc: NprocOpt = None,
) -> None:
    """Run one stage alone as a flow run: it resumes from its own newest checkpoint, or starts from the
    previous stage's final model."""
    # heavy: torch, transformers, math_verify; not at m1 start-up
    from flows.curriculum.plan import active_curriculum

    cfg = _config(config, set_, curriculum, nproc)
    cur, _ = active_curriculum(cfg)
    steps = cur.stages[cur.index(name)].steps  # an unknown stage fails here, before any work
    for line in stage_announcement(cfg, name, restart):  # what will be rebuilt, before it starts
        console.print(line, highlight=False, soft_wrap=True)
    # heavy: torch, transformers, prefect; not at m1 start-up
    from flows.train import train_stage  # torch, prefect: only once there is work to do

    with training_progress({"sft": cfg.train.sft_steps, name: steps}):
        result = run_flow(train_stage, name, cfg, restart=restart)
    _summary([result])


def stage_announcement(cfg, name: str, restart: bool) -> list[str]:
    """What `m1 train stage NAME` is about to do and why: rebuild the base first (and why), retrain the
    stage (its checkpoints discarded, and why) or resume it, or reuse it as it is; and the later stages
    it turns stale."""
    # heavy: torch, transformers, polars; not at m1 start-up
    from flows.curriculum.layout import stage_paths
    from flows.curriculum.mixture import run_data
    from flows.curriculum.plan import active_curriculum, base_state, plan
    from flows.errors import InputError
    from flows.store import DatasetStore

    cur, _ = active_curriculum(cfg)
    store = DatasetStore(cfg.home)
    try:
        data = run_data(cfg, cur, store)
    except InputError:  # datasets the stage flow builds first (it says so)
        return [f"stage {name}: its datasets are built first, then it trains from its start"]
    entries = plan(cfg, cur, data.refs, store)
    index = cur.index(name)
    entry, lines = entries[index], []
    if entry.start == "base":
        _, state, why = base_state(cfg, data.refs, store)
        if state != "done":
            lines.append(
                f"the base model is rebuilt first ({why}): tokenizer and {cfg.train.sft_steps} SFT steps"
            )
    checkpoints = stage_paths(cfg, name).checkpoints
    saved = len(list(checkpoints.glob("step-*"))) if checkpoints.is_dir() else 0
    if restart:
        lines.append(
            f"stage {name}: --restart: its {saved} step checkpoint(s) and final model are discarded, and it "
            f"trains {cur.stages[index].steps} steps from its start"
        )
    elif entry.state == "done":
        lines.append(f"stage {name}: done and unchanged: reused (--restart trains it again)")
    elif entry.state == "stale":
        lines.append(
            f"stage {name}: retrained from its start, {saved} step checkpoint(s) discarded ({entry.reason})"
        )
    else:
        lines.append(
            f"stage {name}: {'resumes from its last checkpoint' if saved else 'trains from its start'}"
        )
    turned = [e.name for e in entries[index + 1 :] if e.state == "done"]
    if turned and (restart or entry.state != "done"):
        lines.append(f"stale afterwards (their start is replaced): {', '.join(turned)}")
    if stale := [e.name for e in entries[index + 1 :] if e.state != "done"]:
        lines.append(f"still to rerun after it (`m1 train curriculum` reruns them): {', '.join(stale)}")
    return lines


@app.command("curriculum")
def curriculum_cmd(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    curriculum: CurriculumOpt = None,
    restart: RestartOpt = False,
    nproc: NprocOpt = None,
) -> None:
    """Run every stage in order (each a subflow), each from the previous stage's final model."""
    # heavy: torch, transformers, prefect; not at m1 start-up
    from flows.curriculum.plan import active_curriculum
    from flows.train import train_curriculum

    cfg = _config(config, set_, curriculum, nproc)
    cur, _ = active_curriculum(cfg)
    with training_progress({"sft": cfg.train.sft_steps} | {s.name: s.steps for s in cur.stages}):
        results = run_flow(train_curriculum, cfg, restart=restart)
    _summary(results)


@app.command("list-stages")
def list_stages(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    curriculum: CurriculumOpt = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per stage, for scripts.")] = False,
) -> None:
    """Show the curriculum's stages: mixture, generation window, budget, overrides, where each starts,
    and whether its final model is done, stale (built from other settings or data) or pending."""
    # heavy: torch, transformers, math_verify; not at m1 start-up
    from flows.curriculum.plan import stage_table

    cfg = _config(config, set_, curriculum)
    rows = stage_table(cfg)
    if json_:
        keys = ("stage", "mixture", "window", "steps", "start", "done", "state", "reason")
        print(json.dumps([{k: r[k] for k in keys} for r in rows], indent=2))
        return
    # heavy: torch, transformers, math_verify; not at m1 start-up
    from flows.curriculum.plan import active_curriculum

    cur, notes = active_curriculum(cfg)
    table = Table(title=f"curriculum {cur.name}: {cur.description}", title_justify="left")
    for col in ("#", "stage", "mixture", "new tokens", "steps", "overrides", "starts from", "state", "why"):
        table.add_column(col)
    for i, r in enumerate(rows):
        lo, hi = r["window"]
        window = str(hi) if lo == hi else f"{lo}..{hi} (+{r['window_step']})"
        table.add_row(
            str(i + 1),
            r["stage"],
            ", ".join(f"{k} {w:g}" for k, w in r["mixture"].items()),
            window,
            str(r["steps"]),
            ", ".join(f"{k}={v}" for k, v in r["overrides"].items()),
            "base (SFT warm start)" if r["start"] == "base" else r["start"],
            {"done": "done", "stale": "[yellow]stale[/]"}.get(r["state"], r["state"]),
            r["reason"],
        )
    console.print(table)
    console.print(f"datasets: {', '.join(cur.dataset_names(cfg.name))}")
    for note in notes:
        console.print(f"[dim]{note}[/]")
