"""Difficulty calibration for the logic tasks: the paper's difficulty bounds (MiniMax-M1, section 4.1).

For a policy (an OpenAI-compatible endpoint, or an m1model checkpoint through `m1model.Engine`) and k,
sample k responses per generated instance at every task and difficulty, score them with the task's rule
verifier, and estimate the pass rate and pass@k. Each task's training band runs from the lowest
difficulty whose pass rate is strictly between 0 and 0.5 up to the highest difficulty whose pass@k is
still above 0 (`select_band`). Bands go to ``$M1_HOME/logic/bands.json`` and the per-cell rates to the
dataset store (``logic_calibration``); a task x difficulty heat map is saved as PNG and reported as a
Prefect markdown artifact with the same numbers as a table.

The flow is thin: `calibrate`, `select_band` and the other helpers are plain functions that the tests
call directly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from prefect import task as prefect_task
from prefect.artifacts import (
    create_markdown_artifact,
    create_table_artifact,
)
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from flows.artifacts import embed_png, save_png
from flows.atomic import atomic_write_text
from flows.config import PolicyConfig
from flows.errors import InputError
from flows.policy import Sampler, make_sampler
from flows.progress import prefect_progress
from flows.store import DatasetStore, m1_home
from verifiers.logic import TASKS, get_task


class CalibrationParams(BaseModel):
    tasks: list[str] | None = Field(None, description="task names; None = every registered task")
    difficulties: list[int] | None = Field(
        None, description="levels to probe; None = every level of the task"
    )
    k: int = Field(4, ge=1, description="samples per instance")
    instances: int = Field(4, ge=1, description="instances per task and difficulty")
    seed: int = 0


# -- estimates and band selection (pure) --------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al., 2021): 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(frozen=True)
class Band:
    low: int | None
    high: int | None
    reason: str


def select_band(cells: dict[int, tuple[float, float]]) -> Band:
    """The training band from {difficulty: (pass rate, pass@k)}.

    low: the lowest difficulty with 0 < pass rate < 0.5 (hard enough to learn from, not hopeless);
    high: the highest difficulty with pass@k > 0 (still solvable sometimes).
    A task the policy always solves at >= 0.5 trains at its hardest solvable level; a task it never
    solves gets no band.
    """
    levels = sorted(cells)
    solvable = [d for d in levels if cells[d][1] > 0]
    if not solvable:
        return Band(None, None, "never solved (pass@k = 0 at every level)")
    high = solvable[-1]
    learnable = [d for d in levels if 0 < cells[d][0] < 0.5]
    if learnable:
        return Band(learnable[0], high, "pass rate in (0, 0.5) from low; pass@k > 0 up to high")
    return Band(high, high, "pass rate >= 0.5 wherever solved: train at the hardest solvable level")


def summarise(rewards: dict[tuple[str, int], list[list[float]]], k: int) -> list[dict[str, Any]]:
    """Rows (task, difficulty, instances, samples, pass_rate, pass_at_k) from rewards per instance."""
    rows = []
    for (task, difficulty), per_instance in sorted(rewards.items()):
        samples = [r for inst in per_instance for r in inst]
        correct = [sum(r >= 1.0 for r in inst) for inst in per_instance]
        rows.append(
            {
                "task": task,
                "difficulty": difficulty,
                "instances": len(per_instance),
                "samples": len(samples),
                "pass_rate": sum(samples) / len(samples) if samples else 0.0,
                "pass_at_k": sum(
                    pass_at_k(len(inst), c, k) for inst, c in zip(per_instance, correct, strict=True)
                )
                / len(per_instance),
            }
        )
    return rows


def bands_from_rows(rows: list[dict[str, Any]]) -> dict[str, Band]:
    by_task: dict[str, dict[int, tuple[float, float]]] = {}
    for row in rows:
        by_task.setdefault(row["task"], {})[row["difficulty"]] = (row["pass_rate"], row["pass_at_k"])
    return {task: select_band(cells) for task, cells in sorted(by_task.items())}


def markdown_report(rows: list[dict[str, Any]], bands: dict[str, Band], k: int, image: Path | None) -> str:
    levels = sorted({row["difficulty"] for row in rows})
    rate = {(row["task"], row["difficulty"]): row for row in rows}
    lines = [f"# Logic calibration (pass rate / pass@{k})", ""]
    lines.append("| task | band | " + " | ".join(f"d{d}" for d in levels) + " |")
    lines.append("|---|---|" + "---|" * len(levels))
    for task, band in bands.items():
        band_text = f"{band.low}..{band.high}" if band.low is not None else "-"
        cells = [
            f"{rate[task, d]['pass_rate']:.2f} / {rate[task, d]['pass_at_k']:.2f}"
            if (task, d) in rate
            else ""
            for d in levels
        ]
        lines.append(f"| {task} | {band_text} | " + " | ".join(cells) + " |")
    if image is not None:
        lines += ["", f"Heat map: `{image}`", "", embed_png(image, "pass rate heat map")]
    return "\n".join(lines)


def heatmap_png(rows: list[dict[str, Any]], path: Path) -> Path:
    """Task x difficulty -> pass rate, written atomically as PNG."""
    # heavy: matplotlib
    import matplotlib

    matplotlib.use("Agg")
    # heavy: matplotlib, numpy
    import matplotlib.pyplot as plt
    import numpy as np

    tasks = sorted({row["task"] for row in rows})
    levels = sorted({row["difficulty"] for row in rows})
    grid = np.full((len(tasks), len(levels)), np.nan)
    for row in rows:
        grid[tasks.index(row["task"]), levels.index(row["difficulty"])] = row["pass_rate"]
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * len(levels), 1.0 + 0.32 * len(tasks)))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(levels)), [str(d) for d in levels])
    ax.set_yticks(range(len(tasks)), tasks, fontsize=8)
    ax.set_xlabel("difficulty")
    ax.set_title("pass rate")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return save_png(fig, path)


# -- the calibration itself --------------------------------------------------------------------------


def calibrate(
    sampler: Sampler, params: CalibrationParams, progress: Callable[[int, int], None] | None = None
):
    """Generate, sample, verify: returns (rows, bands). Pure apart from calling the sampler."""
    names = params.tasks or sorted(TASKS)
    rewards: dict[tuple[str, int], list[list[float]]] = {}
    for done, name in enumerate(names):
        task = get_task(name)
        levels = [d for d in (params.difficulties or task.difficulties) if d in task.levels]
        instances = [
            (d, task.generate(d, params.seed * 1_000_000 + i))
            for d in levels
            for i in range(params.instances)
        ]
        responses = sampler.sample([inst.prompt for _, inst in instances], params.k)
        for (d, inst), samples in zip(instances, responses, strict=True):
            scores = [task.verify(inst.puzzle, text)[0] for text in samples]
            rewards.setdefault((name, d), []).append(scores)
        if progress:
            progress(done + 1, len(names))
    rows = summarise(rewards, params.k)
    return rows, bands_from_rows(rows)


def save(
    rows: list[dict[str, Any]],
    bands: dict[str, Band],
    params: CalibrationParams,
    policy: PolicyConfig,
    home: Path | None = None,
) -> dict[str, Any]:
    """Write the bands JSON, the per-cell table (dataset store) and the heat map; return their paths."""
    root = bands_file(home).parent
    bands_path = bands_file(home)
    record = {
        "policy": policy.model_dump(mode="json"),
        "params": params.model_dump(),
        "bands": {task: asdict(band) for task, band in bands.items()},
    }
    atomic_write_text(bands_path, json.dumps(record, indent=2, sort_keys=True))
    manifest = DatasetStore(home).write(
        "logic_calibration",
        pl.DataFrame(rows),
        params={
            "k": params.k,
            "instances": params.instances,
            "seed": params.seed,
            "policy": record["policy"],
        },
    )
    heatmap = heatmap_png(rows, root / "calibration_heatmap.png")
    return {
        "bands": record["bands"],
        "bands_path": str(bands_path),
        "heatmap_path": str(heatmap),
        "dataset": manifest.ref,
    }


def bands_file(home: Path | None = None) -> Path:
    """Where the calibration's bands are stored (the logic-task producer reads them)."""
    return (home or m1_home()) / "logic" / "bands.json"


def load_bands(home: Path | None = None) -> dict[str, Band]:
    """The stored bands, for the curriculum's later stages."""
    path = bands_file(home)
    if not path.is_file():
        raise InputError(f"{path}: no calibration yet (run `m1 logic calibrate`)")
    return {task: Band(**band) for task, band in json.loads(path.read_text())["bands"].items()}


# -- Prefect ----------------------------------------------------------------------------------------


@prefect_task(cache_policy=NO_CACHE)  # sampling is random by design: a rerun measures the policy afresh
def sample_and_score(
    policy: PolicyConfig, params: CalibrationParams
) -> tuple[list[dict[str, Any]], dict[str, Band]]:
    sampler = make_sampler(policy)
    return calibrate(sampler, params, prefect_progress("logic calibration: tasks done"))


@flow(name="logic-calibration", log_prints=True)
def logic_calibration(policy: PolicyConfig, params: CalibrationParams) -> dict[str, Any]:
    """Estimate pass@k per logic task and difficulty for a policy; store each task's training band."""
    rows, bands = sample_and_score(policy, params)
    result = save(rows, bands, params, policy)
    create_table_artifact(
        rows, key="logic-calibration-rates", description="pass rate and pass@k per task/level"
    )
    create_markdown_artifact(
        markdown_report(rows, bands, params.k, Path(result["heatmap_path"])),
        key="logic-calibration",
        description="logic task difficulty bands",
    )
    get_run_logger().info("bands: %s", {t: (b["low"], b["high"]) for t, b in result["bands"].items()})
    return result
