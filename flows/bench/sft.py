"""`m1 bench sft`: SFT steps with each batch cut into micro-batches of like length, against the whole batch
padded to its longest row (what `sft_warm_start` did before, and what a plain training loop does).

The rows are the pipeline's own warm-start data made the way the pipeline makes it: curated math word
problems and logic puzzles of every task at its easiest level (flows/experiments/data.py), encoded with
a tokenizer trained on them, on a fresh model of the default size. Every side trains the same model from
the same weights on the same sampled batches; the sides differ only in how a batch is cut, so their
losses agree to float rounding (printed). The sides run in turn (`interleaved_medians`, as train-step's
do): one warm-up run each, then `--repeats` rounds of `--steps` steps, the median round reported, so all of
them see the same machine load. The padded-token column is the work each side asks of the model; the
overhead rows show where cutting finer stops paying, which is how `SFTConfig.micro_batch_overhead_tokens`
was chosen.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_start
from flows.bench.train_step import interleaved_medians
from flows.errors import InputError

WHOLE = 10**9  # an overhead no batch outweighs: one padded pass, as before


@app.command("sft")
def bench_sft(
    steps: Annotated[int, typer.Option(min=1, help="SFT steps per side and round.")] = 10,
    repeats: Annotated[int, typer.Option(min=1, help="Rounds; the median round is reported.")] = 3,
    overheads: Annotated[
        str, typer.Option(help="Comma-separated overheads (tokens) to compare.")
    ] = "0,64,256,1024",
    problems: Annotated[
        int | None, typer.Option(min=8, help="Math problems (default: the pipeline's).")
    ] = None,
    logic_per_task: Annotated[int, typer.Option(min=1, help="Puzzles per logic task.")] = 4,
) -> None:
    """Seconds per SFT step, whole padded batches vs micro-batches of like length."""
    try:
        sides = {"whole batch": WHOLE} | {f"overhead {int(o)}": int(o) for o in overheads.split(",")}
    except ValueError:
        raise InputError(f"--overheads {overheads!r}: expected comma-separated integers") from None
    # heavy: torch, numpy, transformers
    import numpy as np
    import torch

    from flows.config import DataConfig, ModelConfig, TrainConfig
    from flows.curriculum.base import base_tokenizer
    from flows.curriculum.prompts import sft_examples
    from flows.experiments.data import generated_logic, generated_math
    from flows.model_settings import fresh_model, sft_config
    from m1model.rl.sft import length_micro_batches, sft_warm_start
    from verifiers.logic import TASKS

    torch.set_num_threads(1)
    console = Console()
    print_start(console)
    model_cfg, tc = ModelConfig(), TrainConfig()
    math_rows = generated_math(problems or DataConfig().n_problems, seed=0)
    logic_rows = generated_logic(logic_per_task, seed=0, tasks=tuple(sorted(TASKS)))
    rows = math_rows.to_dicts() + logic_rows.to_dicts()
    tokenizer = base_tokenizer(rows, model_cfg.vocab_size)
    examples = sft_examples(tokenizer, rows)
    lengths = np.array([len(p) + len(a) for p, a in examples])
    console.print(
        f"{len(math_rows)} math and {len(logic_rows)} logic rows; tokens per row: median "
        f"{int(np.median(lengths))}, p90 {int(np.percentile(lengths, 90))}, max {lengths.max()}; batch "
        f"{tc.batch_size}, default model size, 1 CPU thread",
        highlight=False,
    )
    base = fresh_model(model_cfg, tokenizer)
    rng = np.random.default_rng(tc.seed)
    batches = [rng.choice(len(examples), size=tc.batch_size) for _ in range(200)]
    padded = {
        name: np.mean(
            [
                sum(len(g) * max(lengths[b][g]) for g in length_micro_batches(list(lengths[b]), o))
                for b in batches
            ]
        )
        for name, o in sides.items()
    }
    histories: dict[str, list[dict[str, float]]] = {}

    def run(name: str, overhead: int):
        cfg = replace(sft_config(tc, tokenizer), steps=steps, micro_batch_overhead_tokens=overhead)

        def step() -> float:  # a fresh copy of the same weights each time: every side trains alike
            histories[name] = sft_warm_start(copy.deepcopy(base), examples, cfg)
            return histories[name][-1]["loss"]

        return step

    meter = LoadMeter()
    medians = interleaved_medians({name: run(name, o) for name, o in sides.items()}, repeats, meter)
    times = {name: seconds / steps for name, (seconds, _) in medians.items()}
    losses = {name: [m["loss"] for m in history] for name, history in histories.items()}
    table = Table(title=f"SFT step, median of {repeats} rounds of {steps} steps")
    for col in ("side", "padded tokens / step", "s / step", "speed-up vs whole", "last loss"):
        table.add_column(col, justify="left" if col == "side" else "right")
    whole = times["whole batch"]
    for name in sides:
        t = times[name]
        table.add_row(
            name,
            f"{padded[name]:.0f}",
            f"{t:.3f}",
            meter.ratio("whole batch", name, whole / t),
            f"{losses[name][-1]:.5f}",
        )
    console.print(table)
    drift = max(
        abs(a - b) for name in sides for a, b in zip(losses[name], losses["whole batch"], strict=True)
    )
    console.print(
        f"largest loss difference from the whole batch over the steps: {drift:.2e}", highlight=False
    )
    meter.report(console, "whole batch", *[n for n in sides if n != "whole batch"])
