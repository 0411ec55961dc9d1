"""The runs of the algorithms experiment: one shared SFT warm start, then one RL run per (arm, seed).

Everything but the arm's loss settings is shared: the warm-start weights (trained once, cached on disk
by a fingerprint of its inputs), the items, the prompts each step samples (the pool's RNG is seeded
by (seed, step) alone) and the verifiers that score the responses. So step 1's rollouts are identical
across arms for a given seed, and the curves part only through what the losses do with them.

The harness is assembled from m1model.rl (`sft_warm_start`, `PromptPool`, `RLTrainer`) and the verifier
registry (`flows.curriculum.rewards`); runs go to a process pool, one torch thread per process.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from flows.curriculum import DEFAULT_VERIFIERS
from flows.curriculum.prompts import answer_text, prompt_text
from flows.experiments.arms import Arm, Size
from m1model.allocator import keep_freed_memory

Row = Mapping[str, Any]


@dataclass
class RunResult:
    arm: str
    seed: int
    history: list[dict[str, float]]
    heldout_pass: float
    seconds: float


def encode(tokenizer, rows: Sequence[Row]) -> list[list[int]]:
    return [list(tokenizer.encode(prompt_text(r), add_special_tokens=True)) for r in rows]


def warm_start_key(items: Sequence[Row], size: Size) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([r["id"] for r in items]).encode())
    h.update(json.dumps([size.vocab_size, size.sft_steps, size.sft_batch]).encode())
    return h.hexdigest()[:16]


def tiny_policy(items: Sequence[Row], vocab_size: int):
    """(model, tokenizer): a BPE tokenizer trained on the items' prompts and answers, and a freshly
    initialised model of the pipeline's default size (flows.config.ModelConfig: 3 lightning layers and
    1 softmax layer, MoE, FP32 LM head) for it."""
    import torch

    from flows.config import ModelConfig
    from m1model import M1Config, M1ForCausalLM, train_tokenizer
    from m1model.config import hybrid_layer_types

    tokenizer = train_tokenizer([prompt_text(r) + answer_text(r) for r in items], vocab_size=vocab_size)
    spec = ModelConfig()
    torch.manual_seed(spec.seed)
    dims = spec.model_dump(exclude={"softmax_every", "seed", "vocab_size", "fp32_lm_head"})
    config = M1Config(
        **dims,
        vocab_size=len(tokenizer),
        layer_types=hybrid_layer_types(spec.num_hidden_layers, spec.softmax_every),
        fp32_lm_head=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return M1ForCausalLM(config), tokenizer


def warm_start(items: Sequence[Row], size: Size, cache: Path) -> tuple[Path, bool]:
    """The shared SFT model (tokenizer + weights) for these items; trained once, then read from `cache`.

    Returns (folder, whether it was trained now)."""
    import torch

    from m1model.policy import save_policy
    from m1model.rl.sft import SFTConfig, sft_warm_start

    folder = cache / f"warm-start-{warm_start_key(items, size)}"
    if (folder / "config.json").is_file():
        return folder, False
    torch.set_num_threads(1)
    model, tokenizer = tiny_policy(items, size.vocab_size)
    eos = [tokenizer.eos_token_id]
    examples = [
        (p, list(tokenizer.encode(answer_text(r), add_special_tokens=False)) + eos)
        for p, r in zip(encode(tokenizer, items), items, strict=True)
    ]
    cfg = SFTConfig(
        steps=size.sft_steps, lr=3e-3, batch_size=size.sft_batch, pad_token_id=tokenizer.pad_token_id
    )
    history = sft_warm_start(model, examples, cfg)
    save_policy(model, tokenizer, folder, extra={"sft": history[-1:], "size": asdict(size)})
    return folder, True


def reward_fn(tokenizer, domains):
    from flows.curriculum.rewards import make_reward_fn, resolve_verifiers

    verifiers = resolve_verifiers(domains, DEFAULT_VERIFIERS)
    return make_reward_fn(verifiers, lambda ids: tokenizer.decode(ids, skip_special_tokens=True))


def pass_rate(model, tokenizer, rows: Sequence[Row], score, max_new_tokens: int) -> float:
    """Share of items whose greedy answer is right (reward >= 1: correct, and for math also boxed)."""
    from m1model import Engine, SamplingParams

    params = SamplingParams(
        temperature=0.0, max_tokens=max_new_tokens, stop_token_ids=(tokenizer.eos_token_id,)
    )
    completions = Engine(model).generate(encode(tokenizer, rows), params)
    rewards = score(rows, [c.token_ids for c in completions])
    return sum(r >= 1.0 for r in rewards) / max(len(rows), 1)


def run_arm(
    arm: Arm, seed: int, size: Size, folder: str, train: list[dict], heldout: list[dict]
) -> RunResult:
    """One RL run of `arm` from the shared warm start (runs in a worker process)."""
    import torch

    from m1model import Engine
    from m1model.policy import load_policy
    from m1model.rl.rollout import PromptPool
    from m1model.rl.trainer import RLConfig, RLTrainer

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model, tokenizer = load_policy(folder)
    score = reward_fn(tokenizer, {r["domain"] for r in train + heldout})
    cfg = RLConfig(
        algorithm=arm.algorithm,
        group_size=size.group_size,
        prompts_per_step=size.prompts_per_step,
        lr=size.lr,
        loss=arm.loss,
        updates_per_batch=size.updates_per_batch,
        grad_clip=arm.grad_clip,
        max_new_tokens=size.max_new_tokens,
        stop_token_ids=(tokenizer.eos_token_id,),
        dynamic_sampling=arm.dynamic_sampling,
        max_sampling_rounds=3,
        micro_batch_size=size.prompts_per_step * size.group_size,
        pad_token_id=tokenizer.pad_token_id,
        seed=seed,
    )
    trainer = RLTrainer(model, Engine(model), score, PromptPool(encode(tokenizer, train), train), cfg)
    late = int(size.steps * size.late_from)

    def on_step(metrics: dict[str, float]) -> None:
        # Section 5: a lower IS-weight bound late in the stage (the trainer reads cfg.loss every update).
        if arm.late_eps_is_high is not None and trainer.step == late:
            trainer.cfg.loss = replace(trainer.cfg.loss, eps_is_high=arm.late_eps_is_high)

    history = trainer.train(size.steps, on_step=on_step)
    model.eval()
    heldout_pass = pass_rate(model, tokenizer, heldout, score, size.max_new_tokens)
    return RunResult(arm.name, seed, history, heldout_pass, time.perf_counter() - t0)


def run_all(
    arms: Sequence[Arm],
    size: Size,
    folder: Path,
    train: list[dict],
    heldout: list[dict],
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
        futures = [pool.submit(run_arm, arm, seed, size, str(folder), train, heldout) for arm, seed in jobs]
        for future in as_completed(futures):
            result = future.result()
            results.append(result)
            if on_done is not None:
                on_done(result)
    order = {arm.name: i for i, arm in enumerate(arms)}
    return sorted(results, key=lambda r: (order[r.arm], r.seed))
