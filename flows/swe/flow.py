"""The SWE flow: repositories -> synthesis -> validation -> the `{run}-swe` dataset.

Each step is a Prefect task on the configured runner (flows/runner.py), cached on its inputs with
results under M1_HOME/cache, retried on a Docker engine or endpoint hiccup. Validation is a data step
(flows/curate/step.py: `Validate` in flows/swe/validate.py) wrapped as the other flows' steps are;
repositories and synthesis make the rows it filters, so they are tasks of their own here. Concurrency is bounded
by `swe.workers` everywhere: synthesis runs one repository after another with that many containers,
validation maps over that many shards, one container each. Images are cached by the engine under
content-hash tags, so a second run rebuilds nothing and, with unchanged inputs, reruns nothing.

Entry points: `swe_tasks(config)` (the DAG's subflow; `m1 run` when `swe.enabled`), and the same
library functions from `m1 swe ...`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.config import PipelineConfig, SWEConfig
from flows.curate.result import StepResult
from flows.curate.step_tasks import over
from flows.datasets import SWE, dataset_name
from flows.errors import ConfigError
from flows.lineage import RELEASE, config_inputs, reuse_or_build
from flows.prerequisites import check
from flows.progress import prefect_progress
from flows.runner import CACHED, RETRY, ROW, Tasks, on_runner
from flows.schema import QUARANTINE_REASON as REASON
from flows.store import DatasetStore, StepCount
from flows.swe.items import write_dataset
from flows.swe.repos import make_repos, profile
from flows.swe.synthesize import SynthesisParams, split, synthesize_repo
from flows.swe.validate import Validate, scorer, task_rows
from sandboxes import SandboxUnavailable
from sandboxes.container import engine, reap_orphans
from sandboxes.prerequisites import DOCKER_ENGINE

# What this flow needs from the machine (flows/prerequisites.py): images are built and tests run in Docker.
PREREQUISITES = (DOCKER_ENGINE,)


def repos_dir(config: PipelineConfig) -> Path:
    c = config.swe
    return Path(c.repos_dir) if c.repos_dir else DatasetStore(config.home).root / "swe" / "repos"


@task(name="swe-repos", **RETRY)
def repos_task(names: list[str], output: str) -> list[dict]:
    """Not cached: it checks the repositories on disk (milliseconds when they are there)."""
    return make_repos(names, Path(output))


@task(name="swe-synthesize", **CACHED, **RETRY)
def synthesize_task(name: str, commit: str, quota: int, c: SWEConfig, output: str) -> dict:
    """One repository's tasks; `commit` (the sdist commit) keys the cache with the settings."""
    params = SynthesisParams(seed=c.seed, workers=c.workers, candidates_per_task=c.candidates_per_task)
    endpoint = c.statement.client() if c.statement.url else None
    result = synthesize_repo(
        profile(name), Path(output) / name, quota, params, scorer(c, Path(output)), endpoint=endpoint
    )
    return {
        "repo": name, "tasks": result.tasks, "tried": result.tried, "rejected": dict(result.rejected),
        "kinds": dict(result.kinds), "baseline_tests": result.baseline_tests,
    }  # fmt: skip


def validate(tasks: Tasks, c: SWEConfig, output: str, candidates: list[dict]) -> StepResult:
    """The Validate step over `swe.workers` shards (one container each), tasks dealt round-robin."""
    step, n = Validate(c, output), max(1, min(c.workers, len(candidates)))
    dealt = [candidates[i::n] for i in range(n)]
    rows = task_rows([row for shard in dealt for row in shard])  # `_row`: the order they are reported in
    starts = [sum(len(d) for d in dealt[:i]) for i in range(n)]
    shards = [rows.slice(start, len(d)) for start, d in zip(starts, dealt, strict=True)]
    return over(tasks, step, shards) if candidates else step.run(rows)


def preflight(config: PipelineConfig) -> None:
    """The SWE subflow needs the Docker engine: say so before anything runs."""
    check({SWE: PREREQUISITES})


def inputs(config: PipelineConfig) -> dict:
    """What `{run}-swe` is built from (flows/lineage.py): the SWE settings."""
    return {"config": config_inputs(SWE, config), "release": RELEASE}


@flow(name="m1-swe", flow_run_name="{config.name}-swe", log_prints=True)
def swe_tasks(config: PipelineConfig = PipelineConfig()) -> dict:  # noqa: B008 - the UI form default
    """Synthesise and validate SWE tasks from real repositories and write `{run}-swe`; returns the
    dataset's manifest, the mutation kinds kept, why it was built, and every task run's final state.
    Nothing runs when the dataset was last built from the same inputs (flows/lineage.py: the `swe`
    settings): its recorded result is returned."""
    store = DatasetStore(config.home)
    build = lambda: on_runner(swe_steps, config.runner, store.root)(config)  # noqa: E731
    name = dataset_name(config.name, SWE)
    return reuse_or_build(store, name, swe_tasks.name, inputs(config), build, get_run_logger())


@flow(name="m1-swe-steps", flow_run_name="{config.name}-swe-steps", log_prints=True)
def swe_steps(config: PipelineConfig) -> dict:
    logger = get_run_logger()
    c = config.swe
    try:
        reap_orphans(engine())  # containers of an earlier run that was killed outright
    except SandboxUnavailable as exc:
        raise ConfigError(f"swe.enabled needs the Docker engine: {exc}") from None
    store = DatasetStore(config.home)
    output = str(repos_dir(config))
    tasks = Tasks()
    progress = prefect_progress("SWE tasks: repositories", key="swe-progress")

    repos = tasks.one(repos_task, c.repos, output)
    progress(10.0, 100.0, "SWE tasks: synthesis")
    synthesized = []
    for repo, quota in zip(repos, split(c.n_tasks, len(repos)), strict=True):
        if quota:
            synthesized.append(tasks.one(synthesize_task, repo["repo"], repo["commit"], quota, c, output))
            logger.info(
                "%s: %d tasks from %d candidates",
                repo["repo"],
                len(synthesized[-1]["tasks"]),
                synthesized[-1]["tried"],
            )
    candidates = [row for s in synthesized for row in s["tasks"]]
    progress(50.0, 100.0, "SWE tasks: validation")

    validated = validate(tasks, c, output, candidates)
    checked = [
        {"instance_id": v["instance_id"], "kept": v[REASON] is None, "reason": v[REASON] or "",
         "seconds": v["seconds"], "row": json.loads(v["task"])}
        for v in pl.concat([validated.kept, validated.removed], how="diagonal_relaxed").sort(ROW).iter_rows(named=True)
    ]  # fmt: skip
    kept = [v["row"] for v in checked if v["kept"]]
    dropped = [v for v in checked if not v["kept"]]
    for v in dropped:
        logger.warning("dropped %s: %s", v["instance_id"], v["reason"])
    progress(90.0, 100.0, "SWE tasks: dataset")

    tried = sum(s["tried"] for s in synthesized)
    manifest = write_dataset(
        store,
        config.name,
        kept,
        [(v["instance_id"], v["row"], v["reason"]) for v in dropped],
        kinds=c.kinds,
        repos_dir=Path(output),
        params={"swe": c.model_dump(mode="json"), "repos": repos},
        steps=[
            StepCount(
                "synthesize", tried, len(candidates), "the suite must catch the mutant (F2P), the rest pass"
            ),
            validated.count,
        ],
    )
    kinds = Counter(row.get("mutation", "?") for row in kept)
    report(manifest.ref, synthesized, checked, kinds)
    progress(100.0, 100.0, "SWE tasks: done")
    logger.info(
        "%s: %d tasks (%d items); %d of %d task runs cached",
        manifest.ref,
        len(kept),
        manifest.rows,
        tasks.cached,
        len(tasks.states),
    )
    return {"manifest": json.loads(manifest.to_json()), "kinds": dict(kinds), "tasks": tasks.states}


def report(ref: str, synthesized: list[dict], checked: list[dict], kinds: Counter) -> None:
    """A markdown summary (per repository and mutation kind) and a table of every task."""
    lines = [
        f"# SWE tasks: `{ref}`",
        "",
        "| repository | baseline tests | candidates | synthesised | rejected |",
        "|---|---:|---:|---:|---|",
    ]
    for s in synthesized:
        rejected = ", ".join(f"{why}: {k}" for why, k in sorted(s["rejected"].items())) or "-"
        lines.append(
            f"| {s['repo']} | {s['baseline_tests']} | {s['tried']} | {len(s['tasks'])} | {rejected} |"
        )
    lines += ["", "| mutation kind | validated tasks |", "|---|---:|"]
    lines += [f"| {kind} | {n} |" for kind, n in sorted(kinds.items())]
    dropped = [v for v in checked if not v["kept"]]
    lines += ["", f"{len(checked) - len(dropped)} of {len(checked)} synthesised tasks validated."]
    lines += [f"- dropped `{v['instance_id']}`: {v['reason']}" for v in dropped]
    create_markdown_artifact("\n".join(lines), key="swe-report", description=f"SWE tasks {ref}")
    create_table_artifact(
        [
            {
                "instance_id": v["instance_id"],
                "repo": v["row"].get("repo"),
                "mutation": v["row"].get("mutation"),
                "modifier": v["row"].get("modifier"),
                "FAIL_TO_PASS": len(v["row"].get("FAIL_TO_PASS", [])),
                "PASS_TO_PASS": len(v["row"].get("PASS_TO_PASS", [])),
                "kept": v["kept"],
                "reason": v["reason"],
                "seconds": round(v["seconds"], 1),
            }  # fmt: skip
            for v in checked
        ],
        key="swe-tasks",
        description="every synthesised task and its validation",
    )
