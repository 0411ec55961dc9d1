"""Batched sampling for rollouts: the model's own decode path, plus the repetition early-stop of M1.

Prompts of different lengths are left-padded into one batch and prefilled once; then every step feeds
one token per live sequence. Lightning layers carry a constant-size float32 state, softmax layers a KV
buffer, so a step costs the same at token 100 as at token 10 000 except in the softmax layers.
Finished sequences leave the batch (their cache rows are dropped), so the batch shrinks as it goes.

Early truncation (M1 paper, section 3.2): a sequence stops with finish reason "repetition" once
`repetition_run` consecutive generated tokens each had probability > `repetition_prob` under the
policy; such runs are degenerate loops that only waste rollout budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from m1model.cache import M1Cache
from m1model.modeling import M1ForCausalLM

FinishReason = Literal["stop", "length", "repetition"]


@dataclass(frozen=True)
class SamplingParams:
    """temperature 0 means greedy; top_p 1.0 means no nucleus filtering; seed None means nondeterministic."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    repetition_run: int = 3000
    repetition_prob: float = 0.99

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.repetition_run < 1:
            raise ValueError(f"repetition_run must be >= 1, got {self.repetition_run}")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))


@dataclass
class Completion:
    """One generated continuation.

    token_ids: generated tokens, including the stop token when finish_reason is "stop".
    logprobs: per generated token, float32 log pi(token | prefix) of the *policy*, i.e. log-softmax of
        the raw logits at temperature 1 with no top-p filtering, whatever temperature/top_p were used
        to sample. This is the log pi_old that CISPO's importance ratio needs; the sampling distribution's
        own probabilities would bias the ratio.
    finish_reason: "stop" (a stop token), "length" (max_tokens) or "repetition" (early truncation).
    """

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason


class Engine:
    """Generate with an M1ForCausalLM on its current device and dtype."""

    def __init__(self, model: M1ForCausalLM, max_batch_size: int = 64) -> None:
        self.model = model
        self.max_batch_size = max_batch_size
        self.pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        """One Completion per prompt, in order. Raises ValueError on an empty prompt or an unknown token id."""
        vocab = self.model.config.vocab_size
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt {i} is empty")
            if min(p) < 0 or max(p) >= vocab:
                raise ValueError(f"prompt {i} has token ids outside [0, {vocab})")
        generator = None
        if params.seed is not None:
            generator = torch.Generator(device=self.model.device).manual_seed(params.seed)
        out: list[Completion] = []
        for start in range(0, len(prompts), self.max_batch_size):
            out.extend(self._generate_batch(prompts[start : start + self.max_batch_size], params, generator))
        return out

    @torch.inference_mode()
    def _generate_batch(
        self, prompts: list[list[int]], params: SamplingParams, generator: torch.Generator | None
    ) -> list[Completion]:
        device = self.model.device
        B, L = len(prompts), max(len(p) for p in prompts)
        ids = torch.full((B, L), self.pad_id, dtype=torch.long, device=device)
        mask = torch.zeros(B, L, dtype=torch.bool, device=device)
        for i, p in enumerate(prompts):  # left padding: every row's last prompt token is at column L-1
            ids[i, L - len(p) :] = torch.tensor(p, device=device)
            mask[i, L - len(p) :] = True
        cache = M1Cache(reserve=params.max_tokens)
        out = self.model(ids, attention_mask=mask, cache=cache, use_cache=True, last_only=True)
        logits = out.logits[:, -1]

        stop = torch.tensor(params.stop_token_ids or [-1], device=device)
        rows = torch.arange(B, device=device)  # original index of each live row
        run = torch.zeros(B, dtype=torch.long, device=device)  # consecutive tokens with p > repetition_prob
        tokens: list[list[int]] = [[] for _ in range(B)]
        logps: list[list[float]] = [[] for _ in range(B)]
        reasons: list[FinishReason] = ["length"] * B
        for step in range(params.max_tokens):
            policy = torch.log_softmax(logits.float(), dim=-1)
            token = _sample(logits.float(), params, generator)
            logp = policy.gather(1, token[:, None]).squeeze(1)
            run = torch.where(logp.exp() > params.repetition_prob, run + 1, 0)

            done_stop = torch.isin(token, stop)
            done_rep = run >= params.repetition_run
            done = done_stop | done_rep | (step == params.max_tokens - 1)
            for r, t, lp in zip(rows.tolist(), token.tolist(), logp.tolist(), strict=True):
                tokens[r].append(t)
                logps[r].append(lp)
            if bool(done.any()):
                for j in done.nonzero().flatten().tolist():
                    r = int(rows[j])
                    if done_stop[j]:
                        reasons[r] = "stop"
                    elif done_rep[j]:
                        reasons[r] = "repetition"
                keep = (~done).nonzero().flatten()
                if keep.numel() == 0:
                    break
                rows, run, token = rows[keep], run[keep], token[keep]
                cache.select(keep)
            logits = self.model(token[:, None], cache=cache, use_cache=True).logits[:, -1]
        return [Completion(tokens[i], logps[i], reasons[i]) for i in range(B)]


def _sample(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> torch.Tensor:
    """Next token per row: argmax at temperature 0, else temperature + nucleus (top-p) sampling."""
    if params.temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p < 1:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the first token is always kept).
        outside = sorted_p.cumsum(-1) - sorted_p >= params.top_p
        sorted_p = sorted_p.masked_fill(outside, 0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    # Inverse-CDF draw: exactly the categorical distribution, and on CPU ~15x cheaper per step than
    # torch.multinomial (0.06 vs 0.94 ms for 64 x 512, which draws an exponential per vocabulary entry).
    # u < the row's total mass and right=True: a zero-probability (top-p filtered) token is never drawn.
    cdf = probs.cumsum(-1)
    u = torch.rand(cdf.shape[0], 1, generator=generator, device=cdf.device, dtype=cdf.dtype) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp_max(cdf.shape[1] - 1)
