"""The serving loop: one thread owns the engine and steps it while requests come and go.

HTTP handlers put jobs (the prompt ids of one request, each repeated ``n`` times, and its sampling
settings) on an inbox and await them. The engine thread takes everything in the inbox before every
step, so a request that arrives while others are generating joins the very next step (continuous
batching: nobody waits for a batch to end), and a request leaves the batch, freeing its slot, as soon as
it ends. Each job sees its sequences' tokens as they are sampled (`EngineLoop.stream`, what ``stream:
true`` sends) or all of them at the end (`EngineLoop.generate`).

A job can carry a ``stop`` check (the server's stop strings): it runs in the engine thread on each new
token and ends that sequence there, so a stop string frees the slot at once instead of generating up to
``max_tokens``. When the client goes away the job is cancelled and its sequences are aborted.

An engine failure in a step fails the jobs whose sequences were in it (their states may be half updated)
and nothing else; the loop keeps serving.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from m1model.engine import Completion, Engine, Request, SamplingParams


@dataclass
class Delta:
    """New tokens of one sequence of a job since the last delta (``index``: the sequence's position in
    the job's prompts); ``finish_reason`` set on its last delta."""

    index: int
    token_ids: list[int]
    logprobs: list[float]
    top_logprobs: list[list[tuple[int, float]]] | None
    finish_reason: str | None


@dataclass(eq=False)
class Job:
    prompts: list[list[int]]
    params: SamplingParams
    loop: asyncio.AbstractEventLoop
    events: asyncio.Queue  # Delta, then None when every sequence has finished, or an exception
    stream: bool
    stop: Callable[[list[int]], bool] | None = None
    requests: list[Request] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)  # tokens already delivered, per sequence
    submitted: float = field(default_factory=time.monotonic)


@dataclass
class LoopStats:
    requests: int = 0
    sequences: int = 0
    steps: int = 0
    step_sequences: int = 0  # sum over steps of the sequences that got a token
    busy_s: float = 0.0
    ttft_s: list[float] = field(default_factory=list)  # time to first token of recent sequences
    started: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict[str, float]:
        return {
            "requests": self.requests,
            "sequences": self.sequences,
            "steps": self.steps,
            "step_sequences": self.step_sequences,
            "mean_batch": self.step_sequences / self.steps if self.steps else 0.0,
            "busy_fraction": self.busy_s / max(time.monotonic() - self.started, 1e-9),
        }


class EngineLoop:
    def __init__(self, engine: Engine, *, ttft_window: int = 4096) -> None:
        self.engine = engine
        self.stats = LoopStats()
        self.ttft_window = ttft_window
        self._inbox: queue.Queue = queue.Queue()
        self._jobs: dict[int, tuple[Job, int]] = {}  # request id -> (job, index in the job)
        self._live: set[Job] = set()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._ids = itertools.count()

    def start(self) -> None:
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="m1-engine", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Finish what is in flight, then end the thread."""
        if self._thread is not None:
            self._inbox.put(None)
            self._thread.join(timeout=60)
            self._thread = None

    @property
    def pending(self) -> int:
        """Jobs handed in and not yet taken by the engine thread."""
        return self._inbox.qsize()

    def metrics(self) -> dict[str, float]:
        """The engine's gauges and counters (running, waiting, preempted, memory) and the loop's."""
        return {**self.engine.stats(), **self.stats.as_dict(), "pending": self.pending}

    # -- the handlers' side -------------------------------------------------------------------------------

    async def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        stop: Callable[[list[int]], bool] | None = None,
    ) -> list[Completion]:
        """One Completion per prompt (repeat a prompt for n samples). Raises what the engine raises
        (ValueError for a prompt it refuses)."""
        out: list[Completion | None] = [None] * len(prompts)
        parts: list[list[Delta]] = [[] for _ in prompts]
        async for d in self.stream(prompts, params, stop, _whole=True):
            parts[d.index].append(d)
            if d.finish_reason is not None:
                ds = parts[d.index]
                top = None if ds[0].top_logprobs is None else [t for x in ds for t in x.top_logprobs]
                out[d.index] = Completion(
                    [t for x in ds for t in x.token_ids],
                    [lp for x in ds for lp in x.logprobs],
                    d.finish_reason,
                    top,
                )
        return out  # type: ignore[return-value]

    async def stream(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        stop: Callable[[list[int]], bool] | None = None,
        *,
        _whole: bool = False,
    ) -> AsyncIterator[Delta]:
        """Deltas of every sequence as the engine samples them, in the order they come. Cancelling the
        consumer aborts the job's sequences."""
        loop = asyncio.get_running_loop()
        job = Job(prompts, params, loop, asyncio.Queue(), stream=not _whole, stop=stop)
        self._inbox.put(("submit", job))
        finished = False
        try:
            while True:
                event = await job.events.get()
                if event is None:
                    finished = True
                    return
                if isinstance(event, BaseException):
                    finished = True
                    raise event
                yield event
        finally:
            if not finished:  # the client went away, or the consumer stopped early
                self._inbox.put(("abort", job))

    # -- the engine thread --------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if not self.engine.has_unfinished():
                if self._stopping:
                    return
                self._take(self._inbox.get())  # idle: sleep until something comes
            while True:  # everything that came during the last step joins the next one
                try:
                    self._take(self._inbox.get_nowait())
                except queue.Empty:
                    break
            if not self.engine.has_unfinished():
                continue
            t0 = time.perf_counter()
            try:
                updated = self.engine.step()
            except Exception as exc:  # noqa: BLE001 - fail the jobs of that step, keep serving the others
                self._fail_aborted(exc)
                continue
            finally:
                self.stats.busy_s += time.perf_counter() - t0
            self.stats.steps += 1
            self.stats.step_sequences += len(updated)
            self._deliver(updated)

    def _take(self, item) -> None:
        if item is None:
            self._stopping = True
            return
        kind, job = item
        if kind == "abort":
            for r in job.requests:
                self.engine.abort(r)
                self._jobs.pop(r.id, None)
            self._live.discard(job)
            return
        try:
            job.requests = self.engine.submit(job.prompts, job.params)
        except Exception as exc:  # noqa: BLE001 - a request the engine refuses gets the reason
            self._send(job, exc)
            return
        job.sent = [0] * len(job.requests)
        for i, r in enumerate(job.requests):
            self._jobs[r.id] = (job, i)
        self._live.add(job)
        self.stats.requests += 1
        self.stats.sequences += len(job.requests)

    def _deliver(self, updated: list[Request]) -> None:
        touched: dict[Job, list[int]] = {}
        for r in updated:
            job, i = self._jobs.get(r.id, (None, -1))
            if job is None:
                continue
            if len(r.output) == 1:
                self.stats.ttft_s.append(r.first_token_at - job.submitted)
            if r.finish_reason is None and job.stop is not None and job.stop(r.output):
                self.engine.abort(r, reason="stop")
            touched.setdefault(job, []).append(i)
        if len(self.stats.ttft_s) > 2 * self.ttft_window:
            del self.stats.ttft_s[: -self.ttft_window]
        # One wake-up per event loop per step, whatever the number of jobs: a wake-up makes the loop's
        # thread take the GIL from this one, and a step that woke it per stream ran up to 1.7x slower.
        events: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Queue, object]]] = {}
        for job, indices in touched.items():
            out = events.setdefault(job.loop, [])
            for i in indices:
                r = job.requests[i]
                if job.stream or r.finished:
                    out.append((job.events, self._delta(job, i)))
            if all(r.finished for r in job.requests):
                for r in job.requests:
                    self._jobs.pop(r.id, None)
                self._live.discard(job)
                out.append((job.events, None))
        for loop, items in events.items():
            if items:
                loop.call_soon_threadsafe(_put_all, items)

    @staticmethod
    def _delta(job: Job, i: int) -> Delta:
        r, start = job.requests[i], job.sent[i]
        job.sent[i] = len(r.output)
        top = r.top_logprobs[start:] if r.top_logprobs is not None else None
        return Delta(i, r.output[start:], r.logprobs[start:], top, r.finish_reason)

    def _fail_aborted(self, exc: Exception) -> None:
        """After a failed step: the jobs with a sequence the engine aborted get the error."""
        for job in list(self._live):
            if any(r.finish_reason == "abort" for r in job.requests):
                for r in job.requests:
                    self.engine.abort(r)
                    self._jobs.pop(r.id, None)
                self._live.discard(job)
                self._send(job, exc)

    @staticmethod
    def _send(job: Job, event) -> None:
        job.loop.call_soon_threadsafe(job.events.put_nowait, event)


def _put_all(items: list[tuple[asyncio.Queue, object]]) -> None:
    for q, event in items:
        q.put_nowait(event)
