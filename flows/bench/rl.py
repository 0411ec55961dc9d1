"""`m1 bench rl`: CISPO vs DAPO vs GRPO (the baseline) on the same toy task, same model, same seeds.

The M1 paper's Figure 2 claim, in miniature: with many off-policy updates per generation batch (M1
used 16), PPO-style clipping drops the gradient of every token whose IS ratio has left the trust
region, while CISPO clips only the weight and keeps learning from all tokens, so it reaches a given
reward in fewer steps. The task: a fresh tiny M1 model is rewarded for the fraction of its response
tokens that equal one target token (initially about 1/vocab). Everything but the loss is shared: the
rollouts of step 1 are identical across algorithms for a given seed.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from flows.bench import app

ALGORITHMS = ("grpo", "dapo", "cispo")  # the first is the baseline of the ratios
TARGET = 7


def toy_model(seed: int, vocab: int, hidden: int):
    import torch

    from m1model import M1Config, M1ForCausalLM

    torch.manual_seed(seed)
    return M1ForCausalLM(
        M1Config(
            vocab_size=vocab,
            hidden_size=hidden,
            intermediate_size=hidden * 3 // 2,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=hidden // 2,
            num_local_experts=2,
            num_experts_per_tok=1,
            block_size=16,
            layer_types=["linear_attention", "full_attention"],
        )
    )


def target_fraction(items, responses) -> list[float]:
    return [sum(t == TARGET for t in r) / len(r) for r in responses]


def run(
    algorithm: str,
    seed: int,
    *,
    steps: int,
    updates: int,
    group_size: int,
    prompts: int,
    max_new_tokens: int,
    lr: float,
    vocab: int,
    hidden: int,
) -> tuple[list[dict[str, float]], float]:
    """Per-step metrics of one training run, and its seconds per step."""
    from m1model import Engine
    from m1model.rl.rollout import PromptPool
    from m1model.rl.trainer import RLConfig, RLTrainer

    model = toy_model(seed, vocab, hidden)
    pool = PromptPool([[1 + i % 5, 10 + i % 7, 2] for i in range(4 * prompts)], list(range(4 * prompts)))
    cfg = RLConfig(
        algorithm=algorithm,
        group_size=group_size,
        prompts_per_step=prompts,
        lr=lr,
        updates_per_batch=updates,
        max_new_tokens=max_new_tokens,
        max_sampling_rounds=1,
        seed=seed,
    )
    trainer = RLTrainer(model, Engine(model), target_fraction, pool, cfg)
    t0 = time.perf_counter()
    history = trainer.train(steps)
    return history, (time.perf_counter() - t0) / steps


def steps_to(curve: list[float], threshold: float) -> int | None:
    return next((i + 1 for i, r in enumerate(curve) if r >= threshold), None)


@app.command("rl")
def bench_rl(
    steps: Annotated[int, typer.Option(help="RL steps per run.")] = 10,
    seeds: Annotated[int, typer.Option(help="Runs per algorithm (curves are averaged).")] = 3,
    updates: Annotated[int, typer.Option(help="Off-policy updates per generation batch.")] = 8,
    group_size: Annotated[int, typer.Option(help="Responses per prompt (G).")] = 8,
    prompts: Annotated[int, typer.Option(help="Prompts per step.")] = 8,
    max_new_tokens: Annotated[int, typer.Option(help="Response length.")] = 8,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 3e-3,
    threshold: Annotated[float, typer.Option(help="Reward level for 'steps to reach'.")] = 0.5,
    vocab: Annotated[int, typer.Option(help="Toy vocabulary size.")] = 24,
    hidden: Annotated[int, typer.Option(help="Model width.")] = 32,
) -> None:
    """Reward curves of CISPO and DAPO against GRPO on one toy task; ratios are relative to GRPO."""
    import torch
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    torch.set_num_threads(1)  # a tiny model: more threads only add contention
    results: dict[str, dict[str, float | list[float] | None]] = {}
    with Progress(console=Console(stderr=True)) as progress:
        bar = progress.add_task("training", total=len(ALGORITHMS) * seeds)
        for algo in ALGORITHMS:
            curves, masked, secs = [], [], []
            for seed in range(seeds):
                history, sec = run(
                    algo,
                    seed,
                    steps=steps,
                    updates=updates,
                    group_size=group_size,
                    prompts=prompts,
                    max_new_tokens=max_new_tokens,
                    lr=lr,
                    vocab=vocab,
                    hidden=hidden,
                )
                curves.append([h["reward_mean"] for h in history])
                masked += [h["masked_fraction"] for h in history if "masked_fraction" in h]
                secs.append(sec)
                progress.advance(bar)
            mean = [sum(c[i] for c in curves) / seeds for i in range(steps)]
            results[algo] = {
                "curve": mean,
                "auc": sum(mean) / steps,
                "reach": steps_to(mean, threshold),
                "masked": sum(masked) / max(len(masked), 1),
                "sec": sum(secs) / seeds,
            }

    base = results[ALGORITHMS[0]]
    table = Table(
        title=f"toy RL: {seeds} seed(s) x {steps} steps, {updates} updates per batch, G={group_size}"
    )
    for col in (
        "algorithm",
        "reward step 1",
        "final reward",
        "mean reward",
        "x vs grpo",
        f"steps to {threshold:g}",
        "speed-up vs grpo",
        "dropped tokens",
        "s/step",
    ):
        table.add_column(col, justify="right")
    for algo, r in results.items():
        reach, base_reach = r["reach"], base["reach"]
        if reach and base_reach:
            speedup = f"{base_reach / reach:.2f}x"
        else:
            speedup = f">{steps / reach:.2f}x" if reach else "-"
        table.add_row(
            algo,
            f"{r['curve'][0]:.3f}",
            f"{r['curve'][-1]:.3f}",
            f"{r['auc']:.3f}",
            f"{r['auc'] / max(base['auc'], 1e-9):.2f}x",
            str(reach or "-"),
            speedup,
            f"{r['masked']:.1%}",
            f"{r['sec']:.2f}",
        )
    Console().print(table)
