"""`m1 swe ...`: task repositories, images, synthesis, validation and evaluation of SWE tasks.

Every command that runs containers removes them when interrupted (Ctrl-C, SIGTERM) and first reaps
containers left by a killed earlier run.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.commands.verify import read_rows
from flows.errors import InputError
from flows.progress import bars
from flows.swe.repos import PROFILES, make_repos
from sandboxes import SandboxUnavailable
from sandboxes.container import cleanup_on_signals, engine, reap_orphans
from sandboxes.swe_images import EnvSpec, SWEImageError, SWEImages
from sandboxes.swe_run import SWE_LIMITS
from verifiers.base import ItemError, Reward
from verifiers.swe import KINDS, SWEScorer, SWETask, default_repos_dir

app = typer.Typer(no_args_is_help=True)
err = Console(stderr=True)

ReposOpt = Annotated[
    Path | None,
    typer.Option("--repos", help="Folder of task repositories (DIR/<repo>); default M1_HOME/swe/repos."),
]
WorkersOpt = Annotated[int, typer.Option("--workers", "-w", min=1, help="Containers (and builds) at a time.")]


def _repos(path: Path | None) -> Path:
    return path or default_repos_dir()


def _progress():
    return bars(err, transient=True)


@contextlib.contextmanager
def _containers():
    """The engine (or a one-line error), orphans of killed runs reaped, interrupts cleaned up."""
    try:
        client = engine()
    except SandboxUnavailable as exc:
        raise InputError(str(exc)) from None
    reap_orphans(client)
    with cleanup_on_signals():
        yield client


def _scorer(repos: Path, client, workers: int, wall_s: float | None = None):
    limits = replace(SWE_LIMITS, wall_s=wall_s) if wall_s else SWE_LIMITS
    return SWEScorer(repos, limits, SWEImages(client=client, workers=workers))


def _read_tasks(path: Path) -> list[dict]:
    # heavy: polars; not at m1 start-up
    from flows.swe.items import read_tasks

    rows, bad = read_tasks(path)
    for b in bad:
        err.print(f"[yellow]skipped {b['reason']}[/]", highlight=False)
    if not rows:
        raise InputError(f"{path}: no valid task")
    return rows


@app.command("repos")
def repos(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to create the repositories in.")],
    repo: Annotated[list[str] | None, typer.Option("--repo", help="Only this profile (repeatable).")] = None,
) -> None:
    """Make git repositories from the pinned sdists of real libraries (each with its test suite)."""
    with err.status("downloading sdists and making repositories ..."):
        try:
            rows = make_repos(repo, output)
        except ConnectionError as exc:
            raise InputError(str(exc)) from None
    table = Table(title=f"task repositories in {output}")
    for col in ("repo", "sdist", "commit", "files", "test files", "sources", ""):
        table.add_column(col)
    for r in rows:
        p = PROFILES[r["repo"]]
        table.add_row(r["repo"], r["requirement"], r["commit"][:12], str(r["files"]), str(r["test_files"]),
                      ", ".join(p.sources), "created" if r["created"] else "in place")  # fmt: skip
    Console().print(table)


@app.command("images")
def images(
    tasks: Annotated[
        Path | None, typer.Option("--tasks", help="JSONL tasks: build their instance images too.")
    ] = None,
    repos: ReposOpt = None,
    workers: WorkersOpt = 2,
) -> None:
    """Build the missing SWE images (base, environments, instances) and list them with sizes and build times."""
    rows = _read_tasks(tasks) if tasks else []
    with _containers() as client, _progress() as progress:
        scorer = _scorer(_repos(repos), client, workers)
        built = []
        try:
            if rows:
                specs = [SWETask.from_row(r).instance_spec(scorer.repos_dir) for r in rows]
                bar = progress.add_task("building images", total=len(specs) + len({s.env for s in specs}))
                built = scorer.images.ensure(specs, on_done=lambda _: progress.advance(bar))
            else:
                envs = [EnvSpec(p.name, p.python_packages) for p in PROFILES.values()]
                bar = progress.add_task("building images", total=len(envs) + 1)
                built = [scorer.images.base()]
                progress.advance(bar)
                for env in envs:
                    built.append(scorer.images.environment(env))
                    progress.advance(bar)
        except SWEImageError as exc:
            raise InputError(str(exc)) from None
    table = Table(title=f"SWE images ({sum(b.built for b in built)} built now)")
    for col in ("layer", "name", "tag", "size MB", "layer MB", "build s", ""):
        table.add_column(col, justify="right" if "MB" in col or col == "build s" else "left")
    for b in built:
        secs = "-" if math.isnan(b.seconds) else f"{b.seconds:.1f}"
        table.add_row(
            b.layer,
            b.name,
            b.tag,
            f"{b.size_mb:.0f}",
            f"{b.layer_mb:.1f}",
            secs,
            "built" if b.built else "cached",
        )
    Console().print(table)


@app.command("synthesize")
def synthesize(
    repos: Annotated[
        Path, typer.Option("--repos", help="Folder of task repositories (from `m1 swe repos`).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL of tasks in SWE-bench's format.")],
    n: Annotated[
        int, typer.Option("--n", "-n", min=1, help="Tasks to make, spread over the repositories.")
    ] = 10,
    seed: Annotated[int, typer.Option("--seed", "-s", min=0, help="Same seed, same tasks.")] = 0,
    workers: WorkersOpt = 2,
    endpoint: Annotated[
        str | None, typer.Option(help="OpenAI-compatible URL that rewrites problem statements.")
    ] = None,
    model: Annotated[str, typer.Option(help="Model name sent to --endpoint.")] = "default",
) -> None:
    """Inject bugs by AST mutation into each repository and keep those its test suite catches."""
    # heavy: libcst, polars; not at m1 start-up
    from flows.config import EndpointConfig
    from flows.swe.items import write_jsonl
    from flows.swe.synthesize import SynthesisParams, split, synthesize_repo

    names = [p for p in PROFILES if (repos / p / ".git").exists()]
    if not names:
        raise InputError(
            f"{repos}: no task repository found (make them with `m1 swe repos --output {repos}`)"
        )
    client_endpoint = EndpointConfig(url=endpoint, model=model).client() if endpoint else None
    params = SynthesisParams(seed=seed, workers=workers)
    results = []
    with _containers() as client, _progress() as progress:
        scorer = _scorer(repos, client, workers)
        for name, quota in zip(names, split(n, len(names)), strict=True):
            if not quota:
                continue
            bar = progress.add_task(f"{name}: mutants caught", total=quota)
            results.append(synthesize_repo(
                PROFILES[name], repos / name, quota, params, scorer, endpoint=client_endpoint,
                on_progress=lambda s, bar=bar: progress.update(bar, completed=len(s.tasks)),
            ))  # fmt: skip
    count = write_jsonl(output, [row for r in results for row in r.tasks])
    table = Table(title=f"{output}: {count} tasks (seed {seed})")
    for col in ("repo", "tests", "candidates", "tasks", *KIND_COLUMNS, "rejected"):
        table.add_column(col)
    for r in results:
        rejected = ", ".join(f"{why}: {k}" for why, k in sorted(r.rejected.items())) or "-"
        table.add_row(
            r.repo,
            str(r.baseline_tests),
            str(r.tried),
            str(len(r.tasks)),
            *[str(r.kinds.get(k, 0)) for k in KIND_COLUMNS],
            rejected,
        )
    Console().print(table)


KIND_COLUMNS = (
    "operator_swap",
    "off_by_one",
    "dropped_condition",
    "wrong_return",
    "swapped_arguments",
    "removed_statement",
)


@app.command("validate")
def validate(
    tasks: Annotated[Path, typer.Option("--tasks", help="JSONL tasks in SWE-bench's format.")],
    repos: ReposOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Kept tasks (default: <tasks>.valid.jsonl).")
    ] = None,
    quarantine: Annotated[
        Path | None,
        typer.Option("--quarantine", help="Dropped tasks with reasons (default: <tasks>.quarantine.jsonl)."),
    ] = None,
    run: Annotated[
        str | None, typer.Option("--run", help="Also write the kept tasks as dataset {run}-swe.")
    ] = None,
    workers: WorkersOpt = 2,
) -> None:
    """Keep tasks whose FAIL_TO_PASS fail before the gold patch and whose tests all pass after it."""
    # heavy: prefect, libcst, polars; not at m1 start-up
    from flows.swe.items import write_jsonl
    from flows.swe.validate import validate_tasks

    rows = _read_tasks(tasks)
    output = output or tasks.with_suffix(".valid.jsonl")
    quarantine = quarantine or tasks.with_suffix(".quarantine.jsonl")
    with _containers() as client, _progress() as progress:
        scorer = _scorer(_repos(repos), client, workers)
        bar = progress.add_task("validating", total=len(rows))
        results = validate_tasks(rows, scorer, workers, on_done=lambda _: progress.advance(bar))
    kept = [v.row for v in results if v.kept]
    write_jsonl(output, kept)
    write_jsonl(quarantine, [{**v.row, "reason": v.reason} for v in results if not v.kept])
    if run:
        _write_dataset(run, kept, results, scorer.repos_dir)
    table = Table(title=f"{len(kept)} of {len(results)} tasks kept -> {output}")
    for col in ("instance_id", "mutation", "F2P", "P2P", "kept", "s", "reason"):
        table.add_column(col, overflow="fold")
    for v in results:
        table.add_row(v.instance_id, str(v.row.get("mutation", "-")), str(len(v.row.get("FAIL_TO_PASS", []))),
                      str(len(v.row.get("PASS_TO_PASS", []))), "[green]yes[/]" if v.kept else "[red]no[/]",
                      f"{v.seconds:.1f}", v.reason)  # fmt: skip
    Console().print(table)
    kinds = Counter(row.get("mutation", "-") for row in kept)
    Console().print(
        "kept by mutation kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())), highlight=False
    )


def _write_dataset(run: str, kept: list[dict], results, repos: Path) -> None:
    # heavy: polars; not at m1 start-up
    from flows.store import DatasetStore, StepCount
    from flows.swe.items import write_dataset

    manifest = write_dataset(
        DatasetStore(), run, kept, [(v.instance_id, v.row, v.reason) for v in results if not v.kept],
        kinds=KINDS, repos_dir=repos,
        steps=[StepCount("validate", len(results), len(kept), "F2P fail before, all pass after the gold patch")],
    )  # fmt: skip
    Console().print(f"wrote {manifest.ref}: {manifest.rows} items", highlight=False)


@app.command("evaluate")
def evaluate(
    tasks: Annotated[Path, typer.Option("--tasks", help="JSONL tasks in SWE-bench's format.")],
    predictions: Annotated[
        Path, typer.Option("--predictions", help="JSONL predictions: instance_id, model_patch.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="JSONL: instance_id, resolved, reward, details.")
    ],
    repos: ReposOpt = None,
    workers: WorkersOpt = 2,
) -> None:
    """Score predicted patches (SWE-bench's predictions format) by running each task's tests."""
    # heavy: polars; not at m1 start-up
    from flows.swe.items import write_jsonl

    known = {row["instance_id"]: row for row in _read_tasks(tasks)}
    preds = _read_predictions(predictions)

    def score(pred: dict) -> dict:
        instance_id, patch = pred.get("instance_id"), pred.get("model_patch")
        if "reason" in pred:
            reward = Reward(0.0, {"reason": pred["reason"]})
        elif instance_id not in known:
            reward = Reward(0.0, {"reason": f"unknown instance {instance_id!r}"})
        elif not isinstance(patch, str):
            reward = Reward(0.0, {"reason": "model_patch must be a string"})
        else:
            try:
                reward = scorer.repair(SWETask.from_row(known[instance_id]), patch)
            except ItemError as exc:
                reward = Reward(0.0, {"reason": str(exc)})
            except Exception as exc:  # noqa: BLE001 - one prediction never stops the batch
                reward = Reward(0.0, {"reason": f"{type(exc).__name__}: {exc}"})
        return {
            "instance_id": instance_id,
            "resolved": reward.reward == 1.0,
            "reward": reward.reward,
            "details": reward.details,
        }

    with _containers() as client, _progress() as progress:
        scorer = _scorer(_repos(repos), client, workers)
        bar = progress.add_task("evaluating", total=len(preds))
        with ThreadPoolExecutor(workers) as pool:
            rows = []
            for row in pool.map(score, preds):
                rows.append(row)
                progress.advance(bar)
    write_jsonl(output, rows)
    resolved = sum(r["resolved"] for r in rows)
    table = Table(title=f"{resolved} of {len(rows)} resolved -> {output}")
    for col in ("instance_id", "resolved", "reward", "why"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(str(r["instance_id"]), "[green]yes[/]" if r["resolved"] else "[red]no[/]", f"{r['reward']:.0f}",
                      str(r["details"].get("limit") or r["details"].get("reason", "")))  # fmt: skip
    Console().print(table)


def _read_predictions(path: Path) -> list[dict]:
    """Prediction rows; a line that is not a JSON object becomes a row scored 0 with the reason."""
    if not path.is_file():
        raise InputError(f"{path}: predictions file not found")
    return [
        {"instance_id": None, "reason": problem} if problem else row for _, row, problem in read_rows(path)
    ]
