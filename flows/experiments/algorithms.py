"""`m1 experiment algorithms`: does RL make the model better on held-out items, against the baselines a
sceptic asks for (SFT continued, rejection sampling), and the M1 paper's Figure 2 (CISPO vs DAPO vs GRPO)
plus the section-5 stability options, on the pipeline's own math and logic items.

The paper's claim to check: with 16 off-policy updates per generation batch, CISPO matches DAPO in half
the steps. `run_experiment` is the library function the CLI and the Prefect flow both call; it writes
DIR/steps.csv, DIR/summary.json, DIR/summary.md, DIR/heldout.csv, DIR/heldout.png and DIR/reward.png (see
flows/experiments/summary.py for what each number means) and reports whatever the run shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from flows.experiments.arms import ARMS, FULL, QUICK, Arm, Size
from flows.experiments.data import load_items
from flows.experiments.runs import RunResult, evaluate, evaluate_sampled, reward_fn, run_all, warm_start
from flows.experiments.summary import write_outputs
from flows.store import m1_home
from m1model.policy import load_policy


@dataclass
class Progress:
    """Callbacks for the CLI's progress bar or the flow's progress artifact."""

    phase: Callable[[str], None] = lambda text: None
    run_done: Callable[[RunResult, int, int], None] = lambda result, done, total: None


def size_for(
    quick: bool,
    *,
    seeds: int | None = None,
    steps: int | None = None,
    workers: int | None = None,
    eval_every: int | None = None,
    prompts: int | None = None,
    updates: int | None = None,
    eval_samples: int | None = None,
) -> Size:
    size = QUICK if quick else FULL
    given = (("seeds", seeds), ("steps", steps), ("workers", workers), ("eval_every", eval_every))
    if eval_samples is not None:  # 0 is a choice here (no sampled evaluation), not "the default"
        size = replace(size, eval_samples=eval_samples)
    train = {k: v for k, v in (("prompts_per_step", prompts), ("updates_per_batch", updates)) if v}
    return replace(size, **{k: v for k, v in given if v}, train={**size.train, **train})


def run_experiment(
    output: Path,
    size: Size,
    *,
    run: str | None = None,
    home: str | None = None,
    arms: tuple[Arm, ...] = ARMS,
    progress: Progress | None = None,
) -> str:
    """Run every arm for every seed from one shared warm start; write the outputs; return the markdown
    summary (with the plot embedded) for an artifact."""
    progress = progress or Progress()
    t0 = time.perf_counter()
    progress.phase("preparing the math and logic items")
    items = load_items(
        run=run,
        home=home,
        n_math=size.n_math,
        logic_per_task=size.logic_per_task,
        heldout_fraction=size.heldout_fraction,
        max_difficulty=size.max_difficulty,
    )
    cache = (Path(home) if home else m1_home()) / "experiments" / "algorithms"
    progress.phase(f"SFT warm start ({size.base().sft_steps} steps, shared by every run; cached)")
    folder, _ = warm_start(items.train, size, cache)
    torch.set_num_threads(1)
    model, tokenizer = load_policy(folder)
    score = reward_fn(tokenizer, items.domains)
    warm = evaluate(model, tokenizer, items.heldout, score, size.base())
    warm_sampled = evaluate_sampled(model, tokenizer, items.heldout, score, size.base(), size.eval_samples)

    total = len(arms) * size.seeds
    done = 0

    def on_done(result: RunResult) -> None:
        nonlocal done
        done += 1
        progress.run_done(result, done, total)

    progress.phase(f"{total} RL runs ({len(arms)} arms x {size.seeds} seeds)")
    results = run_all(arms, size, folder, items.train, items.heldout, warm, on_done)
    _, text = write_outputs(
        output,
        results,
        arms,
        size,
        warm,
        warm_sampled=warm_sampled,
        source=items.source,
        n_train=len(items.train),
        seconds=time.perf_counter() - t0,
    )
    return text
