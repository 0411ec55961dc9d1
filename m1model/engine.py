"""The generation engine: continuous batching over lightning-state slots, for serving and for RL rollouts.

One engine, one generation loop (`Engine.step`), two ways in: `Engine.generate` (a list of prompts, all
answered: RL rollouts, evaluation, pass-rate sampling) and `Engine.submit` + `Engine.step` (requests
arriving while others run: `m1 serve model`'s loop, m1model/serving/batcher.py).

The design is vLLM V1's on a small scale (nano-vllm's size), made cheap by the hybrid architecture: a
lightning layer's state is a fixed-size matrix per request, so a request holds one *slot* of a fixed pool
for all its lightning layers, and only the softmax layers (one in eight in MiniMax-M1) need a KV cache,
allocated in blocks as the request grows (m1model/cache.py). Every step the scheduler
(m1model/scheduler.py) admits waiting requests under a token budget, with chunked prefill; a request
leaves at its stop token, its own ``max_tokens`` or the repetition truncation below, and its slot is
reused in the next step. When KV blocks run out the newest request is preempted and later recomputed.

**A request's tokens never depend on its neighbours.** Each token attends to its own request's slot and
blocks only; sampling settings are per request (temperature, top_p, stop tokens, max_tokens, top
log-probs); a seeded request draws from its own generator, one number per sampled token, so it gives
the same tokens alone, in any batch, arriving at any time, and after a preemption. What can differ is
float rounding (a different batch width changes the order of some sums): logprobs agree within 1e-5 in
fp32, which the tests check over arrival orders, preemption and mixed lengths.

Early truncation (M1 paper, section 3.2): a sequence stops with finish reason "repetition" once
`repetition_run` consecutive generated tokens each had probability > `repetition_prob` under the
policy; such runs are degenerate loops that only waste rollout budget.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import torch

from m1model.cache import EnginePool, StepBatch
from m1model.modeling import M1ForCausalLM
from m1model.scheduler import Scheduler

FinishReason = Literal["stop", "length", "repetition", "abort"]
TopLogprobs = list[list[tuple[int, float]]]  # per generated token: the k most likely (id, logprob)


@dataclass(frozen=True)
class SamplingParams:
    """One request's settings. temperature 0 means greedy; top_p 1.0 means no nucleus filtering; seed
    None means nondeterministic (drawn from torch's global generator); logprobs k > 0 also returns the k
    most likely tokens at each generated position."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    repetition_run: int = 3000
    repetition_prob: float = 0.99
    logprobs: int = 0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.repetition_run < 1:
            raise ValueError(f"repetition_run must be >= 1, got {self.repetition_run}")
        if self.logprobs < 0:
            raise ValueError(f"logprobs must be >= 0, got {self.logprobs}")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))


@dataclass
class Completion:
    """One generated continuation.

    token_ids: generated tokens, including the stop token when finish_reason is "stop".
    logprobs: per generated token, float32 log pi(token | prefix) of the *policy*, i.e. log-softmax of
        the raw logits at temperature 1 with no top-p filtering, whatever temperature/top_p were used
        to sample. This is the log pi_old that CISPO's importance ratio needs; the sampling distribution's
        own probabilities would bias the ratio.
    finish_reason: "stop" (a stop token), "length" (max_tokens), "repetition" (early truncation) or
        "abort" (cancelled: a client went away, or the server cut it at a stop string).
    top_logprobs: with ``SamplingParams.logprobs`` = k, the k most likely (token, logprob) per position.
    """

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    top_logprobs: TopLogprobs | None = None


@dataclass(eq=False)
class Request:
    """A request inside the engine: its tokens, where its state lives, and its timings (monotonic s)."""

    id: int
    prompt: list[int]
    params: SamplingParams
    generator: np.random.Generator | None  # its own stream of uniform draws, one per sampled token
    output: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: TopLogprobs | None = None
    finish_reason: FinishReason | None = None
    num_computed: int = 0  # tokens (prompt, then output) whose state and keys are in the cache
    computed_before: int = 0  # the most it ever had: what a preemption makes it compute again
    slot: int = -1
    blocks: list[int] = field(default_factory=list)
    preemptions: int = 0
    run: int = 0  # consecutive generated tokens with probability > repetition_prob
    arrived: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None
    finished_at: float | None = None
    forced: list[int] | None = None  # teacher forcing: the tokens to take instead of sampling

    @property
    def num_tokens(self) -> int:
        return len(self.prompt) + len(self.output)

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def tokens(self, start: int, n: int) -> list[int]:
        """Tokens start .. start+n of prompt + output."""
        p = len(self.prompt)
        if start + n <= p:
            return self.prompt[start : start + n]
        return (self.prompt[start:] if start < p else []) + self.output[max(start - p, 0) : start + n - p]

    def completion(self) -> Completion:
        return Completion(
            list(self.output), list(self.logprobs), self.finish_reason or "abort", self.top_logprobs
        )


# The largest float32 below 1: a float64 draw that rounds up to 1.0 in float32 would pick past the end of
# the CDF (a top-p filtered token).
_BELOW_ONE = 1.0 - 2.0**-24


def request_seed(seed: int, index: int) -> int:
    """The seed of the ``index``-th sequence of a seeded call: distinct sequences (a group's G responses,
    a request's n choices), each reproducible alone."""
    return int(np.random.SeedSequence([seed & (2**63 - 1), index]).generate_state(1, np.uint64)[0] >> 1)


class Engine:
    """Generate with an M1ForCausalLM on its current device and dtype.

    max_num_seqs: request slots (requests running at once; an RL step's P x G responses, 64 x 8 in the
    experiments, then run in one or two waves: on CPU a step of a small model costs about the same for
    64 or 256 rows). max_num_batched_tokens: tokens per step (decodes plus prefill chunks). block_size:
    positions per KV block. kv_cache_tokens: positions of KV cache per softmax layer over all requests
    (default 65536); a request's prompt plus max_tokens must fit in it, and when the running requests
    outgrow it the newest are preempted.
    """

    def __init__(
        self,
        model: M1ForCausalLM,
        max_num_seqs: int = 256,
        *,
        max_num_batched_tokens: int = 1024,
        block_size: int = 16,
        kv_cache_tokens: int | None = None,
    ) -> None:
        if min(max_num_seqs, max_num_batched_tokens, block_size) < 1:
            raise ValueError("max_num_seqs, max_num_batched_tokens and block_size must be >= 1")
        self.model = model
        self.max_num_seqs = max_num_seqs
        self.block_size = block_size
        self.kv_cache_tokens = kv_cache_tokens or 1 << 16
        self.scheduler = Scheduler(max_num_seqs, max_num_batched_tokens)
        self._pool: EnginePool | None = None
        self._ids = itertools.count()
        # tokens fed to the model (prompts, outputs, and again after a preemption), and sampled
        self.counters = {"steps": 0, "computed_tokens": 0, "recomputed_tokens": 0, "generated_tokens": 0}

    @property
    def pool(self) -> EnginePool:
        """The slots and KV blocks, allocated at first use on the model's device and dtype (again if the
        model moved or was cast while no request was in flight)."""
        m = self.model
        if self._pool is None or (
            not self.scheduler.has_unfinished()
            and (self._pool.device, self._pool.dtype) != (m.device, m.dtype)
        ):
            with torch.inference_mode():
                blocks = -(-self.kv_cache_tokens // self.block_size)
                self._pool = EnginePool(m, self.max_num_seqs, blocks, self.block_size)
            self.scheduler.pool = self._pool
        return self._pool

    # -- requests -----------------------------------------------------------------------------------------

    def submit(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams | Sequence[SamplingParams],
        *,
        forced: Sequence[Sequence[int]] | None = None,
    ) -> list[Request]:
        """Queue prompts (one SamplingParams for all, or one each); the i-th of a call seeded s draws with
        seed `request_seed(s, i)`. Everything is checked before anything is queued: ValueError on an empty
        prompt, a token id outside the vocabulary, or a prompt + max_tokens longer than the KV cache.

        forced: teacher forcing, per prompt the tokens to take instead of sampling (their logprobs are
        reported as usual): the rollout path's probabilities of given tokens (m1model/precision.py)."""
        many = [params] * len(prompts) if isinstance(params, SamplingParams) else list(params)
        if len(many) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(many)} sampling settings")
        vocab, capacity = self.model.config.vocab_size, self.pool.capacity_tokens
        for i, (p, sp) in enumerate(zip(prompts, many, strict=True)):
            if not len(p):
                raise ValueError(f"prompt {i} is empty")
            if min(p) < 0 or max(p) >= vocab:
                raise ValueError(f"prompt {i} has token ids outside [0, {vocab})")
            if forced is not None and len(forced[i]) < sp.max_tokens:
                raise ValueError(f"prompt {i}: {len(forced[i])} forced tokens for max_tokens {sp.max_tokens}")
            if len(p) + sp.max_tokens > capacity:
                raise ValueError(
                    f"prompt {i}: {len(p)} tokens + max_tokens {sp.max_tokens} exceed the engine's KV cache "
                    f"of {capacity} positions (kv_cache_tokens)"
                )
        out = []
        for i, (p, sp) in enumerate(zip(prompts, many, strict=True)):
            seed = request_seed(sp.seed, i) if sp.seed is not None else None
            out.append(self._add(list(p), replace(sp, seed=seed)))
            if forced is not None:
                out[-1].forced = list(forced[i])
        return out

    def _add(self, prompt: list[int], params: SamplingParams) -> Request:
        generator = None
        if params.temperature > 0:
            seed = params.seed if params.seed is not None else int(torch.randint(2**62, (1,)).item())
            generator = np.random.default_rng(seed)
        req = Request(next(self._ids), prompt, params, generator)
        if params.logprobs:
            req.top_logprobs = []
        self.scheduler.add(req)
        return req

    def abort(self, req: Request, reason: FinishReason = "abort") -> None:
        """Stop a request now (with ``reason``, unless it already finished) and free its memory."""
        if req.finish_reason is None:
            req.finish_reason = reason
            req.finished_at = time.monotonic()
        self.scheduler.finish(req)

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams | Sequence[SamplingParams]
    ) -> list[Completion]:
        """One Completion per prompt, in order, stepping until every one has finished."""
        reqs = self.submit(prompts, params)
        try:
            while not all(r.finished for r in reqs):
                self.step()
        except BaseException:
            for r in reqs:
                self.abort(r)
            raise
        return [r.completion() for r in reqs]

    # -- the generation loop ------------------------------------------------------------------------------

    @torch.inference_mode()
    def step(self) -> list[Request]:
        """Run one scheduled step: a forward pass over every scheduled token, then one sampled token for
        each request whose known tokens are all computed. Returns those requests (a finished one has its
        finish reason). If the forward pass fails, the requests it held are aborted (their slots may hold
        half-updated states) and the error is raised."""
        pool = self.pool
        work = self.scheduler.schedule()
        if not work:
            if self.scheduler.has_unfinished():
                raise RuntimeError("the scheduler could not place any request (engine memory too small)")
            return []
        decodes = [(r, n) for r, n in work if n == 1]
        prefills = [(r, n) for r, n in work if n > 1]
        device = self.model.device
        batch = StepBatch(
            pool,
            [(r.slot, r.num_computed, r.blocks) for r, _ in decodes],
            [(r.slot, r.num_computed, n, r.blocks) for r, n in prefills],
            device,
        )
        ids: list[int] = []
        sampling: list[Request] = []
        rows: list[int] = []  # flat index of each sampling request's last scheduled token
        for r, n in decodes + prefills:
            ids.extend(r.tokens(r.num_computed, n))
            if r.num_computed + n == r.num_tokens:
                sampling.append(r)
                rows.append(len(ids) - 1)
        try:
            h = self.model.model(torch.tensor(ids, device=device)[None], cache=batch)
            logits = self.model.logits(h[0, torch.tensor(rows, device=device)]).float() if rows else None
        except BaseException:
            for r, _ in work:
                self.abort(r)
            raise
        now = time.monotonic()
        c = self.counters
        c["steps"] += 1
        for r, n in work:
            c["computed_tokens"] += n
            c["recomputed_tokens"] += max(0, min(r.num_computed + n, r.computed_before) - r.num_computed)
            r.num_computed += n
            r.computed_before = max(r.computed_before, r.num_computed)
        if not sampling:
            return []
        tokens, logps, tops = self._sample(logits, sampling)
        for i, r in enumerate(sampling):
            self._append(r, tokens[i], logps[i], tops[i] if tops is not None else None, now)
        c["generated_tokens"] += len(sampling)
        return sampling

    def _sample(
        self, logits: torch.Tensor, reqs: list[Request]
    ) -> tuple[list[int], list[float], list[list[tuple[int, float]]] | None]:
        policy = torch.log_softmax(logits, dim=-1)
        temperature = [r.params.temperature for r in reqs]
        if not any(temperature):
            token = logits.argmax(dim=-1)
        else:
            # one draw per sampled token from the request's own generator: its stream never depends on
            # what else is in the batch
            u = [min(r.generator.random(), _BELOW_ONE) if r.generator is not None else 0.0 for r in reqs]
            t = logits.new_tensor
            token = sample_tokens(logits, t(temperature), t([r.params.top_p for r in reqs]), t(u))
        if any(r.forced is not None for r in reqs):
            token = token.clone()
            for i, r in enumerate(reqs):
                if r.forced is not None:
                    token[i] = r.forced[len(r.output)]
        logp = policy.gather(1, token[:, None]).squeeze(1)
        tops = None
        k = max(r.params.logprobs for r in reqs)
        if k:
            values, indices = policy.topk(min(k, policy.shape[-1]), dim=-1)
            vs, ix = values.tolist(), indices.tolist()
            tops = [
                list(zip(ix[i][: r.params.logprobs], vs[i][: r.params.logprobs], strict=True))
                for i, r in enumerate(reqs)
            ]
        return token.tolist(), logp.tolist(), tops

    def _append(self, r: Request, token: int, logp: float, top, now: float) -> None:
        p = r.params
        r.output.append(token)
        r.logprobs.append(logp)
        if r.top_logprobs is not None:
            r.top_logprobs.append(top)
        if r.first_token_at is None:
            r.first_token_at = now
        r.run = r.run + 1 if np.exp(logp) > p.repetition_prob else 0
        if token in p.stop_token_ids:
            r.finish_reason = "stop"
        elif r.run >= p.repetition_run:
            r.finish_reason = "repetition"
        elif len(r.output) >= p.max_tokens:
            r.finish_reason = "length"
        if r.finish_reason is not None:
            r.finished_at = now
            self.scheduler.finish(r)

    # -- what it holds ------------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Requests running / waiting / waiting after a preemption, preemptions so far, memory in use."""
        s, pool = self.scheduler, self.pool
        waiting = list(s.waiting)  # one copy (atomic under the GIL): /metrics reads while the engine steps
        return {
            "running": len(s.running),
            "waiting": len(waiting),
            "preempted": sum(1 for r in waiting if r.preemptions),
            "preemptions_total": s.preemptions,
            "slots_used": pool.slots - len(pool.free_slots),
            "slots_total": pool.slots,
            "kv_blocks_used": pool.blocks - len(pool.free_blocks),
            "kv_blocks_total": pool.blocks,
            "block_size": pool.block_size,
            **{f"{k}_bytes": v for k, v in pool.nbytes().items()},
            **{f"{k}_total": v for k, v in self.counters.items()},
        }


def sample_tokens(
    logits: torch.Tensor, temperature: torch.Tensor, top_p: torch.Tensor, u: torch.Tensor
) -> torch.Tensor:
    """Next token per row of ``logits`` [R, V] given the row's uniform draw ``u`` in [0, 1): argmax where
    the temperature is 0, else temperature + nucleus (top-p) sampling by inverse CDF.

    Inverse-CDF draw: exactly the categorical distribution, and on CPU ~15x cheaper per step than
    torch.multinomial (which draws an exponential per vocabulary entry). u < the row's total mass and
    right=True: a zero-probability (top-p filtered) token is never drawn."""
    greedy = temperature == 0
    probs = torch.softmax(logits / torch.where(greedy, 1.0, temperature)[:, None], dim=-1)
    nucleus = top_p < 1
    if bool(nucleus.any()):
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the first token is always kept).
        outside = (sorted_p.cumsum(-1) - sorted_p >= top_p[:, None]) & nucleus[:, None]
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p.masked_fill(outside, 0))
    cdf = probs.cumsum(-1)
    drawn = (
        torch.searchsorted(cdf, u[:, None] * cdf[:, -1:], right=True).squeeze(1).clamp_max(cdf.shape[1] - 1)
    )
    return torch.where(greedy, logits.argmax(dim=-1), drawn)
