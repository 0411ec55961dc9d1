"""The runs of the algorithms experiment: one shared SFT warm start, then one run per (arm, seed).

Everything but the arm's own settings is shared, and shared with `m1 run`: the warm start is built as
the pipeline's base is (`flows.curriculum.base`: tokenizer, the one model factory, `sft_warm_start` with
`sft_config`), prompts are encoded by `encode_prompt`, the trainer's settings come from `rl_config`, the
rewards from the verifier registry (`flows.curriculum.rewards`), and every held-out number from the one
greedy evaluation (`flows.curriculum.evaluation.pass_rate`; the end-of-run mean@k from its
`sampled_rate`). The prompts each step samples are seeded by (seed, step) alone, so step 1's rollouts
are identical across RL arms for a given seed and the curves part only through what the losses do with
them.

The warm start is trained once and cached on disk by a fingerprint of its inputs; runs go to a process
pool, one torch thread per process.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from flows.config import ModelConfig, TrainConfig
from flows.curriculum.base import base_tokenizer
from flows.curriculum.evaluation import pass_rate, sampled_rate
from flows.curriculum.prompts import encode_prompt, sft_examples
from flows.curriculum.settings import rl_config
from flows.experiments.arms import Arm, Size
from flows.model_settings import fresh_model, sft_config
from m1model import Engine
from m1model.allocator import keep_freed_memory
from m1model.policy import load_policy, save_policy
from m1model.rl.evaluation import PassRate, SampledPassRate
from m1model.rl.rollout import PromptPool
from m1model.rl.sft import sft_warm_start
from m1model.rl.trainer import RLTrainer
from verifiers.scoring import DEFAULT_VERIFIERS, make_reward_fn, resolve_verifiers

Row = Mapping[str, Any]


@dataclass
class RunResult:
    arm: str
    seed: int
    history: list[dict[str, float]]  # per RL step (the SFT arm: its mean loss per step's worth of updates)
    heldout_curve: list[tuple[int, PassRate]]  # (step, held-out result); step 0 is the warm start
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    sampled_after: SampledPassRate | None = None  # mean@k at the end (None when the size samples none)

    @property
    def heldout_after(self) -> float:
        return self.heldout_curve[-1][1].rate


def encode(tokenizer, rows: Sequence[Row]) -> list[list[int]]:
    return [encode_prompt(tokenizer, r) for r in rows]


def tiny_policy(items: Sequence[Row], vocab_size: int):
    """(model, tokenizer): the pipeline's base before its warm start: a BPE tokenizer trained on the
    items' prompts and answers, and a fresh model of the default size (flows.config.ModelConfig)."""
    tokenizer = base_tokenizer(list(items), vocab_size)
    return fresh_model(ModelConfig(vocab_size=vocab_size), tokenizer), tokenizer


def warm_start_key(items: Sequence[Row], size: Size) -> str:
    t = size.base()
    h = hashlib.sha256()
    h.update(json.dumps([[r["id"], r["prompt"], r["reference"]] for r in items]).encode())  # content, not ids
    h.update(json.dumps([size.vocab_size, t.sft_steps, t.batch_size, t.sft_lr, t.seed]).encode())
    return h.hexdigest()[:16]


def warm_start(items: Sequence[Row], size: Size, cache: Path) -> tuple[Path, bool]:
    """The shared SFT model (tokenizer + weights) for these items; trained once, then read from `cache`.

    Returns (folder, whether it was trained now)."""
    folder = cache / f"warm-start-{warm_start_key(items, size)}"
    if (folder / "config.json").is_file():
        return folder, False
    torch.set_num_threads(1)
    model, tokenizer = tiny_policy(items, size.vocab_size)
    tc = size.base()
    history = sft_warm_start(model, sft_examples(tokenizer, items), sft_config(tc, tokenizer))
    save_policy(model, tokenizer, folder, extra={"sft": history[-1:], "train": dict(size.train)})
    return folder, True


def reward_fn(tokenizer, domains):
    verifiers = resolve_verifiers(domains, DEFAULT_VERIFIERS)
    return make_reward_fn(verifiers, lambda ids: tokenizer.decode(ids, skip_special_tokens=True))


def evaluate(model, tokenizer, rows: Sequence[Row], score, tc: TrainConfig) -> PassRate:
    """The held-out measurement: greedy, in the window the run trains with."""
    return pass_rate(model, tokenizer, rows, tc.max_new_tokens, score)


def evaluate_sampled(
    model, tokenizer, rows: Sequence[Row], score, tc: TrainConfig, samples: int
) -> SampledPassRate | None:
    """The second held-out view: mean@k over answers sampled as the run samples (its temperature, 1 by
    default, and window; every run on the same sampling seed); None for ``samples`` = 0."""
    if not samples:
        return None
    return sampled_rate(
        model, tokenizer, rows, tc.max_new_tokens, score, samples=samples, temperature=tc.temperature
    )


def _eval_steps(size: Size) -> set[int]:
    return {s for s in range(1, size.steps + 1) if s % size.eval_every == 0} | {size.steps}


def _sft_run(model, tokenizer, arm: Arm, seed: int, size: Size, train, heldout, score, curve) -> list:
    """SFT continued on the gold answers: the RL arms' optimiser steps, in their order of steps."""
    tc = arm.config(size.base(), seed)
    per_step = tc.updates_per_batch
    cfg = replace(sft_config(tc, tokenizer), steps=size.optimizer_steps, seed=seed + 1)
    checkpoints, history, losses = _eval_steps(size), [], []

    def on_step(m: dict[str, float]) -> None:
        losses.append(m["loss"])
        if int(m["step"]) % per_step:
            return
        step = int(m["step"]) // per_step
        history.append({"step": float(step), "loss": sum(losses) / len(losses)})
        losses.clear()
        if step in checkpoints:
            curve.append((step, evaluate(model, tokenizer, heldout, score, tc)))

    sft_warm_start(model, sft_examples(tokenizer, train), cfg, on_step=on_step)
    return history


def _rl_run(model, tokenizer, arm: Arm, seed: int, size: Size, train, heldout, score, curve) -> list:
    tc = arm.config(size.base(), seed)
    checkpoints = _eval_steps(size)

    def heldout_eval(trainer, metrics):
        if trainer.step in checkpoints:
            curve.append((trainer.step, evaluate(model, tokenizer, heldout, score, tc)))
        return None

    trainer = RLTrainer(
        model,
        Engine(model),
        score,
        PromptPool(encode(tokenizer, train), train),
        rl_config(tc, tokenizer),
        after_step=[heldout_eval],
    )
    late_step = int(size.steps * size.late_from)
    late_loss = rl_config(arm.config(size.base(), seed, late=True), tokenizer).loss

    def on_step(metrics: dict[str, float]) -> None:
        # Section 5: settings for the end of a stage (the trainer reads cfg.loss at every update).
        if arm.late and trainer.step == late_step:
            trainer.cfg.loss = late_loss

    return trainer.train(size.steps, on_step=on_step)


def run_arm(
    arm: Arm,
    seed: int,
    size: Size,
    folder: str,
    train: list[dict],
    heldout: list[dict],
    warm: PassRate,
) -> RunResult:
    """One run of `arm` from the shared warm start (runs in a worker process)."""
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model, tokenizer = load_policy(folder)
    score = reward_fn(tokenizer, {r["domain"] for r in train + heldout})
    curve: list[tuple[int, PassRate]] = [(0, warm)]
    run = _sft_run if arm.method == "sft" else _rl_run
    history = run(model, tokenizer, arm, seed, size, train, heldout, score, curve)
    sampled = evaluate_sampled(
        model, tokenizer, heldout, score, arm.config(size.base(), seed), size.eval_samples
    )
    return RunResult(arm.name, seed, history, curve, time.perf_counter() - t0, sampled_after=sampled)


def run_all(
    arms: Sequence[Arm],
    size: Size,
    folder: Path,
    train: list[dict],
    heldout: list[dict],
    warm: PassRate,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Every (arm, seed) run, `size.workers` at a time; results in (arm, seed) order."""
    jobs = [(arm, seed) for seed in range(size.seeds) for arm in arms]
    results: list[RunResult] = []
    context = multiprocessing.get_context("spawn")  # no torch/OpenMP state inherited from this process
    # each worker keeps freed memory in its heap, as the `m1` process does
    with ProcessPoolExecutor(
        max_workers=size.workers, mp_context=context, initializer=keep_freed_memory
    ) as pool:
        futures = [
            pool.submit(run_arm, arm, seed, size, str(folder), train, heldout, warm) for arm, seed in jobs
        ]
        for future in as_completed(futures):
            result = future.result()
            results.append(result)
            if on_done is not None:
                on_done(result)
    order = {arm.name: i for i, arm in enumerate(arms)}
    return sorted(results, key=lambda r: (order[r.arm], r.seed))
