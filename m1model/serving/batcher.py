"""Dynamic batching: concurrent requests share engine calls.

One engine thread owns the model. HTTP handlers put jobs (the prompt ids of one request, each repeated
``n`` times, and its sampling settings) on a queue and await a future. The thread takes every job that is
waiting, plus those that arrive within ``max_wait_ms`` of the first, up to ``max_batch_size`` sequences,
and runs them as one `Engine.generate` per compatible group; requests that arrive while the engine is
busy wait for the next call. A step of the engine costs about the same for 1 or 32 rows on a small model
(the work is dominated by per-layer overheads), so throughput grows with concurrency while a lone
request pays at most ``max_wait_ms`` extra (`m1 bench genrm` measures both).

Compatible: the same temperature and top_p (the engine takes one setting per call). ``max_tokens`` is
not part of the key: the group runs to the largest one and each job's completions are cut at its own,
which is exactly what a separate call would have produced (sampling is per row). A job with a ``seed``
runs alone, so that its result does not depend on what else was in the batch.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace

import torch

from m1model.engine import Completion, Engine, SamplingParams

TopLogprobs = list[list[tuple[int, float]]]  # per generated token: the k most likely (id, logprob)


@dataclass
class Job:
    prompts: list[list[int]]
    params: SamplingParams
    top_logprobs: int
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    key: tuple = ()


@dataclass
class Generated:
    completion: Completion
    top_logprobs: TopLogprobs | None = None


@dataclass
class BatchStats:
    requests: int = 0
    sequences: int = 0
    engine_calls: int = 0
    busy_s: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict[str, float]:
        return {
            "requests": self.requests,
            "sequences": self.sequences,
            "engine_calls": self.engine_calls,
            "mean_batch": self.sequences / self.engine_calls if self.engine_calls else 0.0,
            "busy_fraction": self.busy_s / max(time.monotonic() - self.started, 1e-9),
        }


class DynamicBatcher:
    def __init__(self, engine: Engine, *, max_batch_size: int = 64, max_wait_ms: float = 2.0) -> None:
        self.engine = engine
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_ms / 1000
        self.stats = BatchStats()
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._seeded = itertools.count()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="m1-engine", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=60)
            self._thread = None

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def generate(
        self, prompts: list[list[int]], params: SamplingParams, top_logprobs: int = 0
    ) -> list[Generated]:
        """One Generated per prompt (repeat a prompt for n samples). Raises what the engine raises."""
        loop = asyncio.get_running_loop()
        key = (params.temperature, params.top_p, next(self._seeded) if params.seed is not None else None)
        job = Job(prompts, params, top_logprobs, loop.create_future(), loop, key)
        self._queue.put(job)
        return await job.future

    # -- the engine thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs, size = [job], len(job.prompts)
            deadline = time.monotonic() + self.max_wait_s
            while size < self.max_batch_size:
                try:
                    nxt = self._queue.get(timeout=max(deadline - time.monotonic(), 0))
                except queue.Empty:
                    break
                if nxt is None:  # stop after this batch
                    self._queue.put(None)
                    break
                jobs.append(nxt)
                size += len(nxt.prompts)
            groups: dict[tuple, list[Job]] = defaultdict(list)
            for j in jobs:
                groups[j.key].append(j)
            for group in groups.values():
                self._run_group(group)

    def _run_group(self, jobs: list[Job]) -> None:
        t0 = time.perf_counter()
        longest = max(j.params.max_tokens for j in jobs)
        params = replace(jobs[0].params, max_tokens=longest)
        try:
            completions = self.engine.generate([p for j in jobs for p in j.prompts], params)
        except Exception as exc:  # noqa: BLE001 - one bad batch must not stop the engine thread
            if len(jobs) > 1:  # find the request that caused it; the others still get answers
                for j in jobs:
                    self._run_group([j])
                return
            self._resolve(jobs[0], exc)
            return
        self.stats.requests += len(jobs)
        self.stats.sequences += len(completions)
        self.stats.engine_calls += 1
        it = iter(completions)
        for j in jobs:
            out = [Generated(_cut(next(it), j.params.max_tokens)) for _ in j.prompts]
            if j.top_logprobs:
                try:
                    for prompt, g in zip(j.prompts, out, strict=True):
                        g.top_logprobs = top_logprobs(self.engine.model, prompt, g.completion, j.top_logprobs)
                except Exception as exc:  # noqa: BLE001
                    self._resolve(j, exc)
                    continue
            self._resolve(j, out)
        self.stats.busy_s += time.perf_counter() - t0

    @staticmethod
    def _resolve(job: Job, result: object) -> None:
        def settle() -> None:
            if job.future.done():  # the client went away and the handler was cancelled
                return
            if isinstance(result, Exception):
                job.future.set_exception(result)
            else:
                job.future.set_result(result)

        job.loop.call_soon_threadsafe(settle)


def _cut(c: Completion, max_tokens: int) -> Completion:
    """A completion of a longer-running group, as a call with this job's max_tokens would have ended."""
    if len(c.token_ids) <= max_tokens:
        return c
    return Completion(c.token_ids[:max_tokens], c.logprobs[:max_tokens], "length")


@torch.inference_mode()
def top_logprobs(model, prompt: list[int], c: Completion, k: int) -> TopLogprobs:
    """The k most likely tokens (and their log-probs, at temperature 1) at each generated position, from
    one teacher-forced forward pass over prompt + completion: the engine keeps only the sampled token's."""
    if not c.token_ids:
        return []
    ids = torch.tensor([prompt + c.token_ids[:-1]], device=model.device)
    logits = model(ids).logits[0, len(prompt) - 1 :].float()
    values, indices = torch.log_softmax(logits, dim=-1).topk(min(k, logits.shape[-1]), dim=-1)
    return [
        list(zip(row_i, row_v, strict=True))
        for row_i, row_v in zip(indices.tolist(), values.tolist(), strict=True)
    ]
