"""The RL trainer: generate, score, advantage, then several (off-policy) minibatch updates.

One step (MiniMax-M1 section 3; DAPO for dynamic sampling):

1. sample ``prompts_per_step`` prompts, G responses each, with the engine, which also returns each
   token's log-probability under the sampling policy (pi_old);
2. score every response with the injected ``reward_fn``; group-relative advantages (Eq. 2);
3. dynamic sampling: drop groups whose rewards are all equal (zero advantage, no signal) and refill
   from fresh prompts for at most ``max_sampling_rounds`` rounds;
4. split the groups into ``updates_per_batch`` minibatches and take one optimizer step on each with the
   chosen loss. The first is on-policy (IS ratio 1 up to the train/inference precision mismatch, which
   is logged); later ones are off-policy, which is where CISPO and PPO-style clipping differ.

Every step is reproducible from (seed, step), so a resumed run continues exactly as an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from m1model.engine import Engine, SamplingParams
from m1model.rl.advantages import informative_groups, length_window_ready
from m1model.rl.checkpoint import latest_checkpoint, load_state, rng_state, save_checkpoint, set_rng_state
from m1model.rl.losses import Algorithm, LossConfig, policy_loss
from m1model.rl.optim import paper_adamw
from m1model.rl.rollout import Collated, Group, PromptPool, RewardFn, RolloutBatch, collate, score_groups


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
    window_step: int = 0  # tokens added when the p99 response length nears the window
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


def _weighted(rows: list[tuple[Metrics, float]]) -> Metrics:
    """Token-weighted mean of per-microbatch metrics (max for maxima)."""
    total = sum(w for _, w in rows) or 1.0
    out: Metrics = {}
    for key in rows[0][0]:
        vals = [(m[key], w) for m, w in rows if key in m]
        out[key] = max(v for v, _ in vals) if key.endswith("_max") else sum(v * w for v, w in vals) / total
    return out


class RLTrainer:
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
    ):
        self.model, self.engine, self.reward_fn, self.pool, self.cfg = model, engine, reward_fn, pool, cfg
        self.optimizer = paper_adamw(model.parameters(), cfg.lr, cfg.weight_decay)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.checkpoint_every = checkpoint_every
        self.keep_last = keep_last
        self.step = 0
        self.max_new_tokens = cfg.max_new_tokens
        self.history: list[Metrics] = []

    # -- rollouts ---------------------------------------------------------------------------------------

    def _generate(self, indices: list[int], seed: int) -> list[Group]:
        cfg = self.cfg
        prompts = [list(self.pool.prompts[i]) for i in indices]
        params = SamplingParams(
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=self.max_new_tokens,
            stop_token_ids=list(cfg.stop_token_ids),
            seed=seed,
        )
        completions = self.engine.generate([p for p in prompts for _ in range(cfg.group_size)], params)
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
        """Sample, score and (with dynamic sampling) filter and refill groups for the current step."""
        cfg = self.cfg
        batch = RolloutBatch(groups=[])
        for rnd in range(cfg.max_sampling_rounds):
            rng = np.random.default_rng([cfg.seed, self.step, rnd])
            indices = self.pool.sample(cfg.prompts_per_step - len(batch.groups), rng)
            groups = self._generate(indices, seed=int(rng.integers(2**31 - 1)))
            score_groups(
                groups,
                self.pool,
                self.reward_fn,
                max_new_tokens=self.max_new_tokens,
                overlong_cache=cfg.overlong_cache,
            )
            batch.rounds += 1
            batch.sampled += len(groups)
            for g in groups:
                batch.all_rewards += g.rewards
                batch.all_lengths += [len(r) for r in g.responses]
                batch.truncated += sum(f == "length" for f in g.finish_reasons)
                batch.repetitive += sum(f == "repetition" for f in g.finish_reasons)
            if not cfg.dynamic_sampling:
                batch.groups = groups
                break
            informative = informative_groups(torch.tensor([g.rewards for g in groups])).tolist()
            batch.groups += [g for g, keep in zip(groups, informative, strict=True) if keep]
            if len(batch.groups) >= cfg.prompts_per_step:
                break
        return batch

    # -- updates ----------------------------------------------------------------------------------------

    def _micro_batches(self, data: Collated, groups: np.ndarray) -> list[torch.Tensor]:
        per_micro = max(1, self.cfg.micro_batch_size // self.cfg.group_size)
        out = []
        for start in range(0, len(groups), per_micro):
            chunk = torch.as_tensor(groups[start : start + per_micro])
            out.append(torch.isin(data.group_index, chunk).nonzero()[:, 0])
        return out

    def update(self, batch: RolloutBatch) -> Metrics:
        cfg = self.cfg
        device = next(self.model.parameters()).device
        data = collate(batch.groups, normalize_std=cfg.normalize_std, pad_id=cfg.pad_token_id).to(device)
        n_groups = len(batch.groups)
        chunks = np.array_split(np.arange(n_groups), min(cfg.updates_per_batch, n_groups))
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.model.train()

        rows: list[tuple[Metrics, float]] = []
        grad_norms, skipped = [], 0
        mismatch: list[tuple[torch.Tensor, torch.Tensor]] = []
        for u in range(cfg.updates_per_batch):
            groups = chunks[u % len(chunks)]
            self.optimizer.zero_grad(set_to_none=True)
            finite = True
            for idx in self._micro_batches(data, groups):
                sub = data.rows(idx)
                if cfg.track_entropy:  # from the same fused pass as the log-probs
                    logp, entropy = self.model.token_logprobs(
                        sub.input_ids, sub.attention_mask, return_entropy=True
                    )
                    entropy = entropy.detach()
                else:
                    logp, entropy = self.model.token_logprobs(sub.input_ids, sub.attention_mask), None
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
                share = sub.group_index.unique().numel() / len(groups)
                (loss * share).backward()
                finite &= bool(torch.isfinite(loss.detach()))
                rows.append(({"loss": float(loss.detach())} | m, float(sub.response_mask.sum())))
                if u == 0:  # on-policy pass: training vs inference log-probs of the same tokens
                    sel = sub.response_mask > 0
                    mismatch.append((logp.detach()[sel].float().cpu(), sub.old_logp[sel].float().cpu()))
            norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
            grad_norms.append(float(norm))
            if finite and math.isfinite(float(norm)):
                self.optimizer.step()
            else:  # a non-finite step would poison AdamW's moments for good: skip it, and say so
                skipped += 1
            self.optimizer.zero_grad(set_to_none=True)

        metrics = _weighted(rows)
        metrics["grad_norm"] = float(np.mean(grad_norms))
        metrics["grad_norm_max"] = float(np.max(grad_norms))
        metrics["skipped_updates"] = float(skipped)
        train_lp, infer_lp = (torch.cat(x) for x in zip(*mismatch, strict=True))
        metrics["logprob_abs_diff"] = float((train_lp - infer_lp).abs().mean())
        if train_lp.numel() > 1 and train_lp.std() > 0 and infer_lp.std() > 0:
            metrics["logprob_corr"] = float(torch.corrcoef(torch.stack([train_lp, infer_lp]))[0, 1])
        return metrics

    # -- the loop ---------------------------------------------------------------------------------------

    def train_step(self) -> Metrics:
        t0 = time.perf_counter()
        batch = self.rollout()
        rewards = np.asarray(batch.all_rewards)
        lengths = np.asarray(batch.all_lengths)
        metrics: Metrics = {
            "step": float(self.step + 1),
            "reward_mean": float(rewards.mean()),
            "reward_std": float(rewards.std()),
            "groups_sampled": float(batch.sampled),
            "groups_kept": float(len(batch.groups)),
            "sampling_rounds": float(batch.rounds),
            "response_len_mean": float(lengths.mean()),
            "response_len_p99": float(np.quantile(lengths, 0.99)),
            "truncated_fraction": float(batch.truncated / max(len(lengths), 1)),
            "repetition_fraction": float(batch.repetitive / max(len(lengths), 1)),
            "max_new_tokens": float(self.max_new_tokens),
        }
        if batch.groups:
            metrics |= self.update(batch)
        else:  # every group was uninformative: nothing to learn from this step
            metrics["skipped_updates"] = float(self.cfg.updates_per_batch)
        metrics["finite"] = float(all(math.isfinite(v) for v in metrics.values()))
        metrics["seconds"] = time.perf_counter() - t0
        self.step += 1
        self.history.append(metrics)
        self._maybe_widen_window(lengths)
        if (
            self.checkpoint_dir is not None
            and self.checkpoint_every
            and self.step % self.checkpoint_every == 0
        ):
            self.save()
        return metrics

    def _maybe_widen_window(self, lengths: np.ndarray) -> None:
        """M1 section 5: once the p99 response length approaches the window, widen it by one step."""
        limit, step = self.cfg.max_new_tokens_limit, self.cfg.window_step
        if limit is None or not step or self.max_new_tokens >= limit:
            return
        if length_window_ready(torch.as_tensor(lengths), self.max_new_tokens):
            self.max_new_tokens = min(limit, self.max_new_tokens + step)

    def train(self, total_steps: int, on_step: Callable[[Metrics], None] | None = None) -> list[Metrics]:
        """Run until ``self.step == total_steps`` (a resumed trainer continues where it stopped)."""
        while self.step < total_steps:
            m = self.train_step()
            if on_step is not None:
                on_step(m)
        return self.history

    # -- checkpoints ------------------------------------------------------------------------------------

    def save(self, root: str | Path | None = None) -> Path:
        root = root if root is not None else self.checkpoint_dir
        if root is None:
            raise ValueError("no checkpoint directory: pass one to RLTrainer or save()")
        state = {
            "step": self.step,
            "max_new_tokens": self.max_new_tokens,
            "optimizer": self.optimizer.state_dict(),
            "rng": rng_state(),
            "history": self.history,
        }
        return save_checkpoint(root, self.step, self.model, state, keep_last=self.keep_last)

    def resume(self, path: str | Path | None = None) -> bool:
        """Load the given checkpoint, or the latest in ``checkpoint_dir``; False if there is none."""
        path = (
            Path(path)
            if path is not None
            else (latest_checkpoint(self.checkpoint_dir) if self.checkpoint_dir else None)
        )
        if path is None:
            return False
        load_model_weights(self.model, path)
        state = load_state(path)
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = int(state["step"])
        self.max_new_tokens = int(state["max_new_tokens"])
        self.history = list(state["history"])
        set_rng_state(state["rng"])
        return True


def load_model_weights(model: torch.nn.Module, checkpoint: str | Path) -> None:
    """Copy the weights of a checkpoint's HF-format model folder into ``model`` in place."""
    loaded = type(model).from_pretrained(Path(checkpoint) / "model")
    model.load_state_dict(loaded.state_dict())
