"""`m1 bench train-scale`: RL training throughput of a stage's steps on one process and on N (torchrun:
gloo on CPU, nccl on GPUs), with each step split into rollouts, update and communication.

The baseline is what a user runs without ``--nproc``: the same trainer in one process with
``train.torch_threads`` intra-op threads (default 1: on a shared CPU, OpenMP threads spinning on busy cores
cost more than they give), or on the first GPU. The N-process run trains on the same global batch
(``--prompts`` groups of ``--group`` responses per step), each rank generating, scoring and training on
its share with the same thread count (or its own GPU). Tokens/s counts the prompt + response tokens the
update trained on (every rank's), per second of step time, over the timed steps after a warm-up step.

Communication is what `m1model.rl.distributed.comm_seconds` measures on rank 0: the trainer's own
collectives (counts, gathered groups) and DDP's gradient all-reduces from launch to completion. DDP
overlaps the all-reduces with the backward pass, so the share of a step spent waiting is at most that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_start
from flows.bench.model_shape import ShapeOption, parse_shape
from flows.errors import InputError
from m1model.allocator import keep_freed_memory

BENCH_SHAPE = ["hidden_size=128", "num_hidden_layers=4", "head_dim=32", "intermediate_size=256"]
BENCH_SHAPE += ["num_attention_heads=4", "vocab_size=2048"]


def workload(settings: dict[str, Any], ctx, device: str | None = None) -> list[dict[str, float]]:
    """Warm-up + timed RL steps of a fresh model on random prompts; per timed step: its metrics and the
    tokens it trained on. Identical on every rank and in one process (same seeds)."""
    # heavy: torch, transformers, pydantic; not at m1 start-up
    from flows.config import TrainConfig
    from flows.curriculum.settings import rl_config
    from m1model import Engine
    from m1model.policy import build_model
    from m1model.rl.rollout import PromptPool
    from m1model.rl.trainer import RLTrainer

    shape = settings["shape"]
    model = build_model(**shape).to(device or ctx.device)
    rng = np.random.default_rng(0)
    prompts = [rng.integers(3, shape["vocab_size"], settings["prompt_len"]).tolist() for _ in range(64)]

    def distinct(items, responses):  # varies within a group, so every group trains
        return [len(set(r)) / max(len(r), 1) for r in responses]

    def tokens(trainer, batch):  # a step hook: it sees every rank's groups
        return {
            "tokens": float(
                sum(len(g.prompt) * len(g.responses) + sum(map(len, g.responses)) for g in batch.groups)
            )
        }

    tc = TrainConfig(
        group_size=settings["group"],
        prompts_per_step=settings["prompts"],
        max_new_tokens=settings["new_tokens"],
        updates_per_batch=settings["updates"],
        micro_batch_size=settings["group"] * 2,
        dynamic_sampling=False,  # the same work every step
        rl_lr=1e-4,
        seed=1,
        repetition_run=10_000,  # no early truncation: the same work every step
    )
    cfg = rl_config(tc)  # random token ids: no stop token, so every response is new_tokens long
    pool = PromptPool(prompts, [{}] * len(prompts))
    trainer = RLTrainer(model, Engine(model), distinct, pool, cfg, step_hooks=[tokens], dist=ctx)
    history = trainer.train(1 + settings["steps"])
    return history[1:]


def _worker(settings_file: str, out: str) -> None:
    # heavy: torch; not at m1 start-up
    import torch

    from m1model.rl import distributed

    keep_freed_memory()  # as the 1-process side, which runs in the `m1` process
    ctx = distributed.init_from_env()
    settings = json.loads(Path(settings_file).read_text())
    torch.set_num_threads(settings["threads_per_rank"])
    history = workload(settings, ctx)
    if ctx.is_main:
        Path(out).write_text(json.dumps(history))
    distributed.shutdown()


def _summary(history: list[dict[str, float]]) -> dict[str, float]:
    total = sum(m["seconds"] for m in history)
    return {
        "seconds": total / len(history),
        "tokens_per_s": sum(m["tokens"] for m in history) / total,
        "rollout": sum(m["rollout_seconds"] for m in history) / len(history),
        "update": sum(m["update_seconds"] for m in history) / len(history),
        "comm": sum(m.get("comm_seconds", 0.0) for m in history) / len(history),
    }


@app.command("train-scale")
def bench_train_scale(
    nproc: Annotated[int, typer.Option(min=2, help="Processes of the data-parallel run.")] = 2,
    steps: Annotated[int, typer.Option(min=1, help="Timed RL steps (after one warm-up step).")] = 3,
    prompts: Annotated[int, typer.Option(min=1, help="Prompts (groups) per step, over all ranks.")] = 8,
    group: Annotated[int, typer.Option(min=2, help="Responses per prompt (G).")] = 4,
    new_tokens: Annotated[int, typer.Option(min=1, help="Tokens generated per response.")] = 16,
    prompt_len: Annotated[int, typer.Option(min=1)] = 32,
    updates: Annotated[int, typer.Option(min=1, help="Optimizer steps per generation batch.")] = 2,
    threads: Annotated[
        int | None, typer.Option(min=1, help="Intra-op threads per process (default: train.torch_threads).")
    ] = None,
    shape: ShapeOption = None,
) -> None:
    """Tokens/s of RL steps on 1 process vs --nproc processes (gloo on CPU, nccl on GPUs), with the
    rollout / update / communication split of a step. The model: hidden 128, 4 layers, vocab 2048 unless
    --shape says otherwise."""
    # heavy: torch, pydantic; not at m1 start-up
    import torch

    from flows.config import TrainConfig
    from m1model.rl import distributed

    gpus = torch.cuda.device_count()
    if gpus and gpus < nproc:
        raise InputError(f"--nproc {nproc} needs {nproc} GPUs (one per rank); this machine has {gpus}")
    cores = os.cpu_count() or 1
    settings = {
        "shape": parse_shape(BENCH_SHAPE + list(shape or [])),
        "steps": steps,
        "prompts": prompts,
        "group": group,
        "new_tokens": new_tokens,
        "prompt_len": prompt_len,
        "updates": updates,
        "threads_per_rank": threads or TrainConfig().torch_threads or cores,
    }
    console = Console()
    print_start(console)
    meter = LoadMeter()  # the torchrun ranks are children of this process: their CPU is ours, not others'
    where = f"{gpus} GPU(s), nccl" if gpus else f"CPU, {cores} cores, gloo"
    rows = {}

    def side(n: int) -> str:
        return "1 process" if n == 1 else f"{n} processes"

    with console.status("1 process (the baseline)"), meter.side(side(1)):
        torch.set_num_threads(settings["threads_per_rank"])
        rows[1] = _summary(workload(settings, distributed.SINGLE, "cuda:0" if gpus else "cpu"))
    with (
        console.status(f"{nproc} processes under torchrun"),
        tempfile.TemporaryDirectory() as tmp,
        meter.side(side(nproc)),
    ):
        (Path(tmp) / "settings.json").write_text(json.dumps(settings))
        out = Path(tmp) / "history.json"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        cmd += ["-m", __name__, str(Path(tmp) / "settings.json"), str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the {nproc}-process run failed:\n{done.stderr[-3000:]}")
        rows[nproc] = _summary(json.loads(out.read_text()))

    base = rows[1]["tokens_per_s"]
    table = Table(
        title=f"RL steps: {prompts} prompts x {group} responses x {new_tokens} new tokens, {updates} updates "
        f"per batch; {where}"
    )
    for col in (
        "procs",
        "s / step",
        "tokens / s",
        "vs 1 process",
        "rollout s",
        "update s",
        "comm s (share)",
    ):
        table.add_column(col, justify="right")
    for n, r in rows.items():
        comm = "-" if n == 1 else f"{r['comm']:.3f} ({r['comm'] / r['seconds']:.0%})"
        table.add_row(
            str(n),
            f"{r['seconds']:.3f}",
            f"{r['tokens_per_s']:,.0f}",
            meter.ratio(side(1), side(n), r["tokens_per_s"] / base),
            f"{r['rollout']:.3f}",
            f"{r['update']:.3f}",
            comm,
        )
    console.print(table)
    console.print(
        f"{settings['threads_per_rank']} intra-op thread(s) per process. Communication is rank 0's time in "
        "collectives (DDP's all-reduces overlap the backward pass: the wait is at most that)."
    )
    meter.report(console, side(1), side(nproc))


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
