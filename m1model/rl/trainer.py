"""The RL trainer: generate, score, advantage, then several (off-policy) minibatch updates.

One step (MiniMax-M1 section 3; DAPO for dynamic sampling):

1. sample ``prompts_per_step`` prompts, G responses each, with the engine (continuous batching: a
   response that ends early frees its slot for the next one at once), which also returns each token's
   log-probability under the sampling policy (pi_old); the step logs the engine's tokens/s;
2. score every response with the injected ``reward_fn``; group-relative advantages (Eq. 2);
3. dynamic sampling: drop groups whose rewards are all equal (zero advantage, no signal) and refill
   from fresh prompts for at most ``max_sampling_rounds`` rounds;
4. split the groups into ``updates_per_batch`` minibatches and take one optimizer step on each with the
   chosen loss. The first is on-policy (IS ratio 1 up to the train/inference precision mismatch, which
   is logged); later ones are off-policy, which is where CISPO and PPO-style clipping differ.

Every step is reproducible from (seed, step), so a resumed run continues exactly as an uninterrupted one.

**Across processes** (torchrun; `m1model.rl.distributed`): every rank draws the same prompts from the
same (seed, step, round) and generates and scores its own share of the groups, so a group never spans
ranks and its advantages stay group-relative. Dynamic sampling refills until the *global* count of
informative groups is reached, with that count all-reduced, so every rank runs the same rounds and the
same number of optimizer steps. Hooks and metrics see every rank's groups (gathered), so the curriculum's
weights move identically everywhere. The loss keeps Eq. 4's normalisation over the global batch: see
`update`.

Why one file over 400 lines: it is one class, `RLTrainer`, whose methods share its state (model, engine,
optimiser, hooks, length window, step) and together are the step above, read top to bottom; its settings
(`RLConfig`) sit with it. Every part that stands on its own already lives beside it: rollout.py,
advantages.py, losses.py, optim.py, window.py, checkpoint.py, distributed.py. Spreading the class's
methods over files would make a reader follow one step through several.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from m1model.engine import Engine, SamplingParams
from m1model.rl.advantages import informative_groups
from m1model.rl.checkpoint import (
    MODEL_DIR,
    checkpoint_path,
    latest_checkpoint,
    load_state,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from m1model.rl.distributed import SINGLE, DataParallel, DistContext, Strategy, comm_seconds
from m1model.rl.losses import Algorithm, LossConfig, policy_loss
from m1model.rl.optim import paper_adamw
from m1model.rl.rollout import Collated, Group, PromptPool, RewardFn, RolloutBatch, collate, score_groups
from m1model.rl.window import LengthWindow


@dataclass
class RLConfig:
    algorithm: Algorithm = "cispo"
    group_size: int = 8  # G responses per prompt
    prompts_per_step: int = 8
    lr: float = 1e-6
    weight_decay: float = 0.0
    loss: LossConfig = field(default_factory=LossConfig)
    updates_per_batch: int = 2  # optimizer steps per generation batch (M1 used 16)
    grad_clip: float = 1.0
    max_new_tokens: int = 64  # the generation window at the start
    max_new_tokens_limit: int | None = None  # widen up to this (M1 section 5); None: fixed window
    window_step: int = 0  # tokens added when p99 length nears the window and perplexity converged
    window_ppl_steps: int = 3  # steps over which perplexity must be stable before widening
    window_ppl_tol: float = 0.05  # relative perplexity change counted as stable
    repetition_run: int = 3000  # early truncation: stop after this many tokens in a row ...
    repetition_prob: float = 0.99  # ... each with probability above this (M1 section 3.2)
    temperature: float = 1.0
    top_p: float = 1.0
    stop_token_ids: tuple[int, ...] = ()
    normalize_std: bool = True
    dynamic_sampling: bool = True
    max_sampling_rounds: int = 4
    overlong_cache: int = 0  # DAPO soft overlong penalty over the last N tokens of the window; 0: off
    micro_batch_size: int = 64  # sequences per forward pass (gradient accumulation beyond)
    track_entropy: bool = True  # log the policy entropy (the paper watches it for collapse)
    pad_token_id: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are relative to the group")
        if self.max_new_tokens_limit is not None and self.max_new_tokens_limit < self.max_new_tokens:
            raise ValueError("max_new_tokens_limit must be >= max_new_tokens")
        if self.prompts_per_step < 1 or self.updates_per_batch < 1 or self.max_sampling_rounds < 1:
            raise ValueError("prompts_per_step, updates_per_batch and max_sampling_rounds must be >= 1")


Metrics = dict[str, float]
# Called after each step's rollouts, before the update; returns extra metrics to log (or None). A hook
# may change the trainer's state for later steps (the pool's weights, the window), never this batch.
StepHook = Callable[["RLTrainer", RolloutBatch], Metrics | None]
# Called after each step's update, before it is recorded and checkpointed (e.g. validation every N steps).
AfterStep = Callable[["RLTrainer", Metrics], Metrics | None]


def _weighted(rows: list[tuple[Metrics, float]]) -> Metrics:
    """Token-weighted mean of per-microbatch metrics (max for maxima)."""
    total = sum(w for _, w in rows) or 1.0
    out: Metrics = {}
    for key in rows[0][0]:
        vals = [(m[key], w) for m, w in rows if key in m]
        out[key] = max(v for v, _ in vals) if key.endswith("_max") else sum(v * w for v, w in vals) / total
    return out


class RLTrainer:
    """``engine`` samples the rollouts. An engine with its own copy of the policy (vLLM, or the replica
    an FSDP run samples from) has ``load_weights(named_tensors)``: the trainer pushes the updated weights
    into it after every update, so the next batch is sampled from the current policy."""

    def __init__(
        self,
        model: torch.nn.Module,
        engine: Engine,
        reward_fn: RewardFn,
        pool: PromptPool,
        cfg: RLConfig,
        *,
        checkpoint_dir: str | Path | None = None,
        checkpoint_every: int = 0,
        keep_last: int = 2,
        step_hooks: Sequence[StepHook] = (),
        after_step: Sequence[AfterStep] = (),
        dist: DistContext = SINGLE,
        strategy: Strategy = "ddp",
    ):
        self.model, self.engine, self.reward_fn, self.pool, self.cfg = model, engine, reward_fn, pool, cfg
        self.step_hooks = list(step_hooks)
        self.after_step = list(after_step)
        self.dist = dist
        self.parallel = DataParallel(model, dist, strategy)  # shards the model under FSDP
        self.optimizer = paper_adamw(model.parameters(), cfg.lr, cfg.weight_decay)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.checkpoint_every = checkpoint_every
        self.keep_last = keep_last
        self.step = 0
        self.window = LengthWindow(
            cfg.max_new_tokens,
            cfg.max_new_tokens_limit,
            cfg.window_step,
            ppl_steps=cfg.window_ppl_steps,
            ppl_tol=cfg.window_ppl_tol,
        )
        self.history: list[Metrics] = []
        self._generation_seconds = 0.0

    @property
    def max_new_tokens(self) -> int:
        """The current generation window."""
        return self.window.current

    # -- rollouts ---------------------------------------------------------------------------------------

    def _generate(self, indices: list[int], seed: int) -> list[Group]:
        if not indices:  # a rank whose share of a refill round is empty
            return []
        cfg = self.cfg
        prompts = [list(self.pool.prompts[i]) for i in indices]
        params = SamplingParams(
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=self.max_new_tokens,
            stop_token_ids=list(cfg.stop_token_ids),
            seed=seed,
            repetition_run=cfg.repetition_run,
            repetition_prob=cfg.repetition_prob,
        )
        t0 = time.perf_counter()
        completions = self.engine.generate([p for p in prompts for _ in range(cfg.group_size)], params)
        self._generation_seconds += time.perf_counter() - t0
        groups = []
        for k, (i, prompt) in enumerate(zip(indices, prompts, strict=True)):
            cs = completions[k * cfg.group_size : (k + 1) * cfg.group_size]
            groups.append(
                Group(
                    index=i,
                    prompt=prompt,
                    responses=[list(c.token_ids) for c in cs],
                    logprobs=[list(c.logprobs) for c in cs],
                    finish_reasons=[c.finish_reason for c in cs],
                    rewards=[],
                )
            )
        return groups

    def rollout(self) -> RolloutBatch:
        """Sample, score and (with dynamic sampling) filter and refill this rank's groups for the current
        step. Every rank draws the same prompts and takes every world_size-th one."""
        cfg, d = self.cfg, self.dist
        batch = RolloutBatch(groups=[])
        self._generation_seconds = 0.0
        kept = 0  # informative groups so far, on all ranks
        for rnd in range(cfg.max_sampling_rounds):
            rng = np.random.default_rng([cfg.seed, self.step, rnd])
            indices = self.pool.sample(cfg.prompts_per_step - kept, rng)
            seed = int(rng.integers(2**31 - 1)) + d.rank  # ranks sample different responses
            groups = self._generate(indices[d.rank :: d.world_size], seed=seed)
            if groups:
                score_groups(
                    groups,
                    self.pool,
                    self.reward_fn,
                    max_new_tokens=self.max_new_tokens,
                    overlong_cache=cfg.overlong_cache,
                )
            batch.rounds += 1
            batch.sampled_groups += groups
            if not cfg.dynamic_sampling:
                batch.groups = groups
                break
            if groups:
                informative = informative_groups(torch.tensor([g.rewards for g in groups])).tolist()
                batch.groups += [g for g, keep in zip(groups, informative, strict=True) if keep]
            kept = int(d.sum(len(batch.groups))[0])  # one decision for all ranks: same rounds everywhere
            if kept >= cfg.prompts_per_step:
                break
        batch.generation_seconds = self._generation_seconds
        return batch

    def gather(self, batch: RolloutBatch) -> RolloutBatch:
        """Every rank's groups in one batch (rank order), identical on every rank; this batch itself in
        one process."""
        if not self.dist.enabled:
            return batch
        parts = self.dist.gather((batch.groups, batch.sampled_groups, batch.rounds))
        return RolloutBatch(
            groups=[g for kept, _, _ in parts for g in kept],
            sampled_groups=[g for _, sampled, _ in parts for g in sampled],
            rounds=parts[0][2],
        )

    # -- updates ----------------------------------------------------------------------------------------

    def _micro_batches(self, data: Collated, groups: np.ndarray) -> list[torch.Tensor]:
        per_micro = max(1, self.cfg.micro_batch_size // self.cfg.group_size)
        out = []
        for start in range(0, len(groups), per_micro):
            chunk = torch.as_tensor(groups[start : start + per_micro])
            out.append(torch.isin(data.group_index, chunk).nonzero()[:, 0])
        return out

    def update(self, batch: RolloutBatch) -> Metrics:
        """``updates_per_batch`` optimizer steps on this rank's groups, each on one minibatch.

        Eq. 4 normalises each group's token sum by the group's own token count and averages over the
        groups of the minibatch. A group never spans ranks, so its token count is local; the number of
        groups N_u of minibatch u is global and all-reduced. A micro-batch holding n of them contributes
        its per-group mean with weight n / N_u; gradients are averaged over the W ranks, so each rank's
        loss is scaled by W. The sum over ranks and micro-batches is then exactly the single-process
        loss on the global minibatch (minibatch u = every rank's u-th share of its own groups).
        """
        cfg, d = self.cfg, self.dist
        device = next(self.model.parameters()).device
        n_local = len(batch.groups)
        data = None
        if n_local:
            data = collate(
                batch.groups,
                normalize_std=cfg.normalize_std,
                pad_id=cfg.pad_token_id,
                verified_only=cfg.algorithm == "rft",
            ).to(device)
        n_global = int(d.sum(n_local)[0])
        if n_global == 0:
            raise ValueError("update() needs at least one group on some rank")
        chunks = np.array_split(np.arange(n_local), min(cfg.updates_per_batch, n_global))
        self.model.train()

        rows: list[tuple[Metrics, float]] = []
        # Each update's loss, weighted as its gradient is (share of the groups), summed over ranks below:
        # a token-weighted mean of micro-batch losses would depend on the micro-batch size.
        losses = [0.0] * cfg.updates_per_batch
        grad_norms, skipped = [], 0
        mismatch = torch.zeros(7, dtype=torch.float64)  # sufficient statistics, summed over ranks
        for u in range(cfg.updates_per_batch):
            groups = chunks[u % len(chunks)]
            n_u = int(d.sum(len(groups))[0])
            micro = self._micro_batches(data, groups) if len(groups) else []
            n_micro = int(d.max(len(micro)))
            self.optimizer.zero_grad(set_to_none=True)
            finite = True
            for k in range(n_micro):
                with self.parallel.accumulate(last=k == n_micro - 1):
                    if k >= len(micro):  # this rank has no more micro-batches this step; others do
                        self.parallel.dummy_backward(grouped=True)
                        continue
                    sub = data.rows(micro[k])
                    # Each group's prompt runs once, not once per response; the head at response tokens only.
                    out = self.parallel.group_logprobs(
                        sub.prompt_ids,
                        sub.prompt_mask,
                        sub.response_ids,
                        sub.response_mask,
                        sub.group_index,
                        return_entropy=cfg.track_entropy,  # from the same fused pass as the log-probs
                    )
                    logp, entropy = (out[0], out[1].detach()) if cfg.track_entropy else (out, None)
                    loss, m = policy_loss(
                        cfg.algorithm,
                        logp,
                        sub.old_logp,
                        sub.advantages,
                        sub.response_mask,
                        cfg.loss,
                        group_index=sub.group_index,
                        entropy=entropy,
                    )
                    share = sub.group_index.unique().numel() / n_u
                    (loss * (share * d.world_size)).backward()
                finite &= bool(torch.isfinite(loss.detach()))
                losses[u] += float(loss.detach()) * share
                rows.append((m, float(sub.response_mask.sum())))
                if u == 0:  # on-policy pass: training vs inference log-probs of the same tokens
                    sel = sub.response_mask > 0
                    mismatch += _mismatch_sums(logp.detach()[sel], sub.old_logp[sel])
            norm = self.parallel.clip_grad_norm_(cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
            grad_norms.append(norm)
            if d.all_true(finite) and math.isfinite(norm):
                self.optimizer.step()
            else:  # a non-finite step would poison AdamW's moments for good: skip it, and say so
                skipped += 1
            self.optimizer.zero_grad(set_to_none=True)

        metrics = {"loss": float(np.mean(d.sum(*losses)))}
        metrics |= _weighted([row for part in d.gather(rows) for row in part])
        metrics["grad_norm"] = float(np.mean(grad_norms))
        metrics["grad_norm_max"] = float(np.max(grad_norms))
        metrics["skipped_updates"] = float(skipped)
        metrics |= _mismatch_metrics(d.sum(*mismatch.tolist()))
        return metrics

    def push_weights(self) -> None:
        """Load the current weights into an engine that holds its own copy (vLLM, an FSDP replica)."""
        load = getattr(self.engine, "load_weights", None)
        if load is not None:
            load(self.parallel.full_weights())

    # -- the loop ---------------------------------------------------------------------------------------

    def train_step(self) -> Metrics:
        t0, comm0 = time.perf_counter(), comm_seconds()
        local = self.rollout()
        batch = self.gather(local)  # every rank's groups: the metrics and hooks see the global batch
        t_rollout = time.perf_counter()
        rewards = np.asarray(batch.all_rewards)
        lengths = np.asarray(batch.all_lengths)
        finish = batch.all_finish_reasons
        metrics: Metrics = {
            "step": float(self.step + 1),
            "reward_mean": float(rewards.mean()),
            "reward_std": float(rewards.std()),
            "groups_sampled": float(batch.sampled),
            "groups_kept": float(len(batch.groups)),
            "sampling_rounds": float(batch.rounds),
            "response_len_mean": float(lengths.mean()),
            "response_len_p99": float(np.quantile(lengths, 0.99)),
            "truncated_fraction": finish.count("length") / max(len(finish), 1),
            "repetition_fraction": finish.count("repetition") / max(len(finish), 1),
            "repetition_truncated": float(finish.count("repetition")),
        }
        for hook in self.step_hooks:  # curriculum weights, length-bias monitors: read the rollouts
            metrics |= hook(self, batch) or {}
        t_update = time.perf_counter()
        if batch.groups:
            metrics |= self.update(local)
            self.push_weights()
        else:  # every group was uninformative: nothing to learn from this step
            metrics["skipped_updates"] = float(self.cfg.updates_per_batch)
        metrics["finite"] = float(all(math.isfinite(v) for v in metrics.values()))
        metrics["seconds"] = time.perf_counter() - t0
        metrics["rollout_seconds"] = t_rollout - t0
        # this rank's sampling speed: tokens generated per second inside the engine (all rounds)
        metrics["rollout_tokens"] = float(sum(local.all_lengths))
        metrics["rollout_tokens_per_s"] = metrics["rollout_tokens"] / max(local.generation_seconds, 1e-9)
        metrics["update_seconds"] = time.perf_counter() - t_update
        if self.dist.enabled:  # this rank's time in collectives, all-reduces overlapping backward included
            metrics["comm_seconds"] = comm_seconds() - comm0
        metrics |= self.window.observe(lengths, batch.mean_nll)  # may widen the next step's window
        self.step += 1
        for hook in self.after_step:
            metrics |= hook(self, metrics) or {}
        self.history.append(metrics)
        if (
            self.checkpoint_dir is not None
            and self.checkpoint_every
            and self.step % self.checkpoint_every == 0
        ):
            self.save()
        return metrics

    def train(self, total_steps: int, on_step: Callable[[Metrics], None] | None = None) -> list[Metrics]:
        """Run until ``self.step == total_steps`` (a resumed trainer continues where it stopped)."""
        while self.step < total_steps:
            m = self.train_step()
            if on_step is not None:
                on_step(m)
        return self.history

    # -- checkpoints ------------------------------------------------------------------------------------

    def save(self, root: str | Path | None = None) -> Path:
        """Write a checkpoint (rank 0 writes; every rank must call it, since FSDP gathers shards)."""
        root = root if root is not None else self.checkpoint_dir
        if root is None:
            raise ValueError("no checkpoint directory: pass one to RLTrainer or save()")
        state = {
            "step": self.step,
            "window": self.window.state_dict(),
            "hooks": [h.state_dict() if hasattr(h, "state_dict") else None for h in self.step_hooks],
            # The hooks set these from the rollouts: the next step samples with them.
            "pool_weights": None if self.pool.weights is None else [float(w) for w in self.pool.weights],
            "optimizer": self.parallel.optimizer_state_dict(self.optimizer),
            "rng": rng_state(),
            "rng_ranks": self.dist.gather(rng_state()),
            "history": self.history,
        }
        weights = self.parallel.full_state_dict()
        if not self.dist.is_main:
            return checkpoint_path(root, self.step)
        return save_checkpoint(
            root, self.step, self.model, state, keep_last=self.keep_last, state_dict=weights
        )

    def resume(self, path: str | Path | None = None) -> bool:
        """Load the given checkpoint, or the latest in ``checkpoint_dir``; False if there is none. Every
        rank loads the checkpoint rank 0 wrote."""
        path = (
            Path(path)
            if path is not None
            else (latest_checkpoint(self.checkpoint_dir) if self.checkpoint_dir else None)
        )
        if path is None:
            return False
        # FSDP2 subclasses the model's class: load with the class that defines from_pretrained.
        cls = next(c for c in type(self.model).__mro__ if "from_pretrained" in vars(c))
        weights = cls.from_pretrained(Path(path) / MODEL_DIR).state_dict()
        self.parallel.load_full_state_dict(weights)
        state = load_state(path)
        self.parallel.load_optimizer_state_dict(self.optimizer, state["optimizer"])
        self.step = int(state["step"])
        self.window.load_state_dict(state["window"])
        for hook, saved in zip(self.step_hooks, state.get("hooks", []), strict=False):
            if saved is not None and hasattr(hook, "load_state_dict"):
                hook.load_state_dict(saved)  # e.g. dynamic mixture weights, restored with the pool
        if "pool_weights" in state:
            self.pool.set_weights(state["pool_weights"])
        self.history = list(state["history"])
        ranks = state.get("rng_ranks") or []
        set_rng_state(ranks[self.dist.rank] if len(ranks) == self.dist.world_size else state["rng"])
        self.push_weights()
        return True


def _mismatch_sums(train_lp: torch.Tensor, infer_lp: torch.Tensor) -> torch.Tensor:
    """n, sum|x-y|, sum x, sum y, sum x^2, sum y^2, sum xy of the two log-prob vectors (float64)."""
    x, y = train_lp.double().cpu(), infer_lp.double().cpu()
    return torch.stack(
        [
            torch.tensor(float(x.numel()), dtype=torch.float64),
            (x - y).abs().sum(),
            x.sum(),
            y.sum(),
            (x * x).sum(),
            (y * y).sum(),
            (x * y).sum(),
        ]
    )


def _mismatch_metrics(sums: list[float]) -> Metrics:
    """The train-vs-rollout log-prob gap of the on-policy pass (the paper's precision-mismatch check):
    mean absolute difference and Pearson correlation, from sums over every rank's tokens."""
    n, absdiff, sx, sy, sxx, syy, sxy = sums
    out = {"logprob_abs_diff": absdiff / max(n, 1.0)}
    vx, vy = n * sxx - sx * sx, n * syy - sy * sy
    if n > 1 and vx > 0 and vy > 0:
        out["logprob_corr"] = (n * sxy - sx * sy) / math.sqrt(vx * vy)
    return out
