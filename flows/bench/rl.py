"""`m1 bench rl`: seconds per RL step of m1model's RLTrainer against TRL's GRPOTrainer with loss_type="cispo".

The baseline is the trainer a user would pick instead: TRL 1.16 (extra `bench`), on the same work:

- the same checkpoint: the pipeline's tiny hybrid model with a tokenizer trained on its math items, saved
  once; m1model loads it, transformers loads it as MiniMaxForCausalLM (the same logits, a tested fact);
- the same data (the pipeline's synthetic math prompts), group size G, generation window, temperature 1;
- the same optimizer (AdamW 0.9 / 0.95 / eps 1e-15, the same learning rate, constant schedule, clip 1.0)
  and the same updates per generation batch: U minibatches of P*G/U completions each, one optimizer
  step per minibatch (TRL: per_device_train_batch_size = P*G/U, steps_per_generation = U);
- the same loss family: CISPO with the IS weight capped at 3 (TRL: epsilon_high = 3.0), no KL, no
  dynamic sampling (TRL has none), fp32 everywhere; TRL's gradient checkpointing, bf16 and the MoE
  router loss off, so that neither side does work the other skips.

Each generation batch is split into: generation (sampling the completions), the old-log-prob pass
(TRL recomputes pi_old with a forward pass when U > 1; m1model's engine returns pi_old with each
sampled token), reward scoring, and the update (U forward + backward + optimizer steps, plus each
trainer's own bookkeeping). In m1model's update each group's prompt runs once and its states feed the
group's G responses (`group_logprobs`); TRL runs the prompt again for every response. What that saves
has its own row, m1model with the prompt run per response as TRL does. The trainers alternate in
rounds so all see the same machine load.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_allocator, print_start
from flows.errors import InputError

PHASES = ("generation", "old log-probs", "reward", "update")
TRL_NAME, OURS = "TRL GRPOTrainer", "m1model RLTrainer"
PER_RESPONSE = "m1model, prompt per response"


def _timed(fn: Callable, clock: dict[str, float], phase: str, when: Callable[[], bool] = lambda: True):
    def wrapper(*args, **kwargs):
        if not when():
            return fn(*args, **kwargs)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock[phase] += time.perf_counter() - t0

    return wrapper


def make_checkpoint(folder: Path, n_problems: int) -> tuple[list[str], list[dict[str, Any]]]:
    """The pipeline's tiny model + tokenizer as an HF checkpoint; returns the prompts (its math items)."""
    # heavy: torch, transformers, math_verify; not at m1 start-up
    from flows.curriculum.prompts import prompt_text
    from flows.experiments.data import generated_math
    from flows.experiments.runs import tiny_policy
    from m1model.policy import save_policy

    rows = generated_math(n_problems, seed=0).to_dicts()
    model, tokenizer = tiny_policy(rows, vocab_size=512)
    save_policy(model, tokenizer, folder)
    return [prompt_text(r) for r in rows], rows


def per_response_logprobs(model):
    """`group_logprobs` computed as without prompt sharing: every response row runs its own copy of its
    group's prompt (`token_logprobs` on the concatenated rows), as TRL does. The bench's row for what
    sharing the prompt saves."""
    # heavy: torch; not at m1 start-up
    import torch

    def group_logprobs(
        prompt_ids, prompt_mask, response_ids, response_mask, prompt_index, return_entropy=False
    ):
        ids = torch.cat([prompt_ids[prompt_index], response_ids], dim=1)
        mask = torch.cat([prompt_mask[prompt_index], response_mask.to(prompt_mask.dtype)], dim=1)
        positions = torch.cat([torch.zeros_like(prompt_mask[prompt_index, 1:]), response_mask], dim=1).bool()
        out = model.token_logprobs(ids, mask, return_entropy=return_entropy, positions=positions)
        start = prompt_ids.shape[1] - 1  # position t scores token t + 1: the first response token
        return tuple(o[:, start:] for o in out) if return_entropy else out[:, start:]

    return group_logprobs


class Ours:
    """m1model's RLTrainer, its phases timed by wrapping the engine, the reward function and `update`.
    share_prompts=False: each response runs its own copy of the prompt in the update (per_response_logprobs)."""

    def __init__(self, folder: Path, rows: list[dict], s: dict[str, Any], share_prompts: bool = True):
        # heavy: torch, transformers, math_verify; not at m1 start-up
        from flows.config import TrainConfig
        from flows.curriculum.settings import rl_config
        from flows.experiments.runs import encode, reward_fn
        from m1model import Engine
        from m1model.policy import load_policy
        from m1model.rl.rollout import PromptPool
        from m1model.rl.trainer import RLTrainer

        model, tokenizer = load_policy(folder)
        self.clock: dict[str, float] = defaultdict(float)
        tc = TrainConfig(
            algorithm="cispo",
            group_size=s["group_size"],
            prompts_per_step=s["prompts"],
            rl_lr=s["lr"],
            eps_is_low=1e6,
            eps_is_high=2.0,
            updates_per_batch=s["updates"],
            grad_clip=1.0,
            max_new_tokens=s["max_new_tokens"],
            dynamic_sampling=False,
            max_sampling_rounds=1,
            micro_batch_size=s["prompts"] * s["group_size"],
            repetition_run=10_000,  # no early truncation: TRL has none
        )
        # the same generation, scoring and update as a stage's; entropy is not logged (TRL does not either)
        cfg = replace(rl_config(tc, tokenizer), track_entropy=False)
        score = _timed(reward_fn(tokenizer, {"math"}), self.clock, "reward")
        engine = Engine(model)
        engine.generate = _timed(engine.generate, self.clock, "generation")
        self.trainer = RLTrainer(model, engine, score, PromptPool(encode(tokenizer, rows), rows), cfg)
        if not share_prompts:
            self.trainer.parallel.group_logprobs = per_response_logprobs(model)
        self.trainer.update = _timed(self.trainer.update, self.clock, "update")

    def batches(self, n: int) -> list[dict[str, float]]:
        out = []
        for _ in range(n):
            self.clock.clear()
            t0 = time.perf_counter()
            self.trainer.train_step()
            out.append({"total": time.perf_counter() - t0, **self.clock})
        return out


class TRL:
    """TRL's GRPOTrainer(loss_type="cispo") on the same checkpoint; phases timed by wrapping its methods."""

    def __init__(self, folder: Path, prompts: list[str], rows: list[dict], s: dict[str, Any], out: Path):
        # heavy: torch, transformers, datasets; not at m1 start-up; lazy: optional extra [bench] (trl)
        import torch
        from datasets import Dataset
        from transformers import MiniMaxForCausalLM, PreTrainedTokenizerFast, TrainerCallback
        from trl import GRPOConfig, GRPOTrainer

        from flows.experiments.runs import reward_fn

        tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
        tokenizer.padding_side = "left"
        model = MiniMaxForCausalLM.from_pretrained(folder, dtype=torch.float32)
        score = reward_fn(tokenizer, {"math"})
        by_prompt = {p: r for p, r in zip(prompts, rows, strict=True)}

        def reward(prompts, completions, completion_ids, **_):
            return score([by_prompt[p] for p in prompts], completion_ids)

        batch = s["prompts"] * s["group_size"]
        self.updates = s["updates"]
        args = GRPOConfig(
            output_dir=str(out),
            per_device_train_batch_size=batch // s["updates"],
            steps_per_generation=s["updates"],
            gradient_accumulation_steps=1,
            num_generations=s["group_size"],
            num_iterations=1,
            max_completion_length=s["max_new_tokens"],
            temperature=1.0,
            top_p=1.0,
            learning_rate=s["lr"],
            adam_beta1=0.9,
            adam_beta2=0.95,
            adam_epsilon=1e-15,
            weight_decay=0.0,
            lr_scheduler_type="constant",
            warmup_steps=0,
            max_grad_norm=1.0,
            loss_type="cispo",
            epsilon_high=3.0,  # TRL caps the CISPO weight at epsilon_high: m1model's 1 + eps_is_high
            beta=0.0,
            router_aux_loss_coef=0.0,  # router loss off: m1model's RL loss has none
            scale_rewards="group",  # (R - mean) / std within the group, as m1model's normalize_std
            gradient_checkpointing=False,
            bf16=False,
            use_cpu=True,
            max_steps=10**6,
            logging_steps=10**6,
            save_strategy="no",
            report_to=[],
            seed=0,
            dataloader_num_workers=0,
        )
        self.trainer = GRPOTrainer(
            model=model,
            reward_funcs=[reward],
            args=args,
            train_dataset=Dataset.from_dict({"prompt": prompts}),
            processing_class=tokenizer,
        )
        self.clock: dict[str, float] = defaultdict(float)
        t = self.trainer
        t._generate = _timed(t._generate, self.clock, "generation")
        t._calculate_rewards = _timed(t._calculate_rewards, self.clock, "reward")
        # the same method computes pi_old (no grad, inside generation) and the training log-probs
        t._get_per_token_logps_and_entropies = _timed(
            t._get_per_token_logps_and_entropies,
            self.clock,
            "old log-probs",
            lambda: not torch.is_grad_enabled(),
        )
        self.marks: list[tuple[float, dict[str, float]]] = []
        bench = self

        class Marks(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step % bench.updates == 0:  # a generation batch is done
                    bench.marks.append((time.perf_counter(), dict(bench.clock)))
                    bench.clock.clear()

        t.add_callback(Marks())

    def run(self, n: int) -> list[dict[str, float]]:
        """One train() over 1 + n generation batches; the first (warm-up) is dropped."""
        self.marks.clear()
        self.clock.clear()
        self.trainer.args.max_steps = (n + 1) * self.updates
        self.marks.append((time.perf_counter(), {}))
        self.trainer.train()
        rows = []
        for (a, _), (b, clock) in zip(self.marks, self.marks[1:], strict=False):
            rows.append({"total": b - a, **clock})
        return rows[1:]


def _phase_row(name: str, batches: list[dict[str, float]]) -> dict[str, float]:
    med = {k: statistics.median(b.get(k, 0.0) for b in batches) for k in ("total", *PHASES[:3])}
    med["update"] = max(0.0, med["total"] - sum(med[k] for k in PHASES[:3]))
    return {"name": name, **med}


@app.command("rl")
def bench_rl(
    batches: Annotated[int, typer.Option(min=1, help="Timed generation batches per trainer and round.")] = 3,
    rounds: Annotated[int, typer.Option(min=1, help="Alternations of the two trainers.")] = 2,
    prompts: Annotated[int, typer.Option(min=1, help="Prompts per generation batch (P).")] = 8,
    group_size: Annotated[int, typer.Option(min=2, help="Responses per prompt (G).")] = 8,
    updates: Annotated[int, typer.Option(min=1, help="Optimizer steps per generation batch (U).")] = 2,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Generation window.")] = 16,
    lr: Annotated[float, typer.Option(help="AdamW learning rate (both).")] = 5e-4,
    threads: Annotated[int, typer.Option(min=1, help="torch intra-op threads (both).")] = 1,
) -> None:
    """Seconds per generation batch, split into generation / old log-probs / reward / update:
    m1model's RLTrainer vs TRL's GRPOTrainer(loss_type="cispo"), same checkpoint, data and settings."""
    # heavy: torch; not at m1 start-up
    import torch

    if (prompts * group_size) % updates:
        raise InputError(f"--updates {updates} must divide P*G = {prompts * group_size} (equal minibatches)")
    try:
        # lazy: optional extra [bench] (trl)
        import trl
    except ImportError:
        raise InputError("m1 bench rl needs TRL: pip install 'm1-pipeline[bench]'") from None
    torch.set_num_threads(threads)
    console = Console()
    print_start(console)
    s = dict(prompts=prompts, group_size=group_size, updates=updates, max_new_tokens=max_new_tokens, lr=lr)
    meter = LoadMeter()
    results: dict[str, list[dict[str, float]]] = {TRL_NAME: [], PER_RESPONSE: [], OURS: []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "policy"
        with console.status("building the checkpoint and the data"):
            texts, rows = make_checkpoint(folder, n_problems=max(64, 4 * prompts))
        with console.status("setting up the trainers"):
            theirs = TRL(folder, texts, rows, s, Path(tmp) / "trl")
            ours = {PER_RESPONSE: Ours(folder, rows, s, share_prompts=False), OURS: Ours(folder, rows, s)}
            for trainer in ours.values():
                trainer.batches(1)  # warm-up; TRL's warm-up batch is the first of each run and is dropped
        for r in range(rounds):
            with console.status(f"round {r + 1}/{rounds}: TRL"), meter.side(TRL_NAME):
                results[TRL_NAME] += theirs.run(batches)
            for name, trainer in ours.items():
                with console.status(f"round {r + 1}/{rounds}: {name}"), meter.side(name):
                    results[name] += trainer.batches(batches)

    rows_ = [_phase_row(name, b) for name, b in results.items()]
    base = rows_[0]["total"]
    table = Table(
        title=f"seconds per generation batch (median of {batches * rounds}): P={prompts} x G={group_size}, "
        f"window {max_new_tokens}, {updates} update(s) per batch, TRL {trl.__version__}, {threads} thread(s)"
    )
    for col in ("trainer", *PHASES, "total", "speed-up vs TRL"):
        table.add_column(col, justify="left" if col == "trainer" else "right")
    for row in rows_:
        table.add_row(
            row["name"],
            *(f"{row[p]:.3f} ({row[p] / row['total']:.0%})" for p in PHASES),
            f"{row['total']:.3f}",
            meter.ratio(TRL_NAME, row["name"], base / row["total"]),
        )
    console.print(table)
    print_allocator(console, "both trainers")
    meter.report(console, TRL_NAME, PER_RESPONSE, OURS)
