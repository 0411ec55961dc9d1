"""The engine's scheduler: which requests run in the next step, and how many of their tokens.

nano-vllm's scheduler in vLLM V1's unified form, where a request is just tokens to compute (its prompt,
then each sampled token) and a step gives each scheduled request some of them under one token budget
(``max_num_batched_tokens``):

1. running requests first, oldest first: a decoding request gets its one token, a request still being
   prefilled the next chunk of its prompt that the budget allows (chunked prefill: a long prompt never
   stalls the decoding requests for more than one budget's worth of work);
2. then waiting requests, first come first served, while a slot is free, the budget lasts and the KV
   blocks for their first chunk are free.

When a running request needs a KV block and none is free, the most recently admitted running request is
preempted: its slot and blocks are freed and it goes back to the front of the queue with everything it
has generated, to be recomputed (prompt and output prefilled again) when memory allows. Victims come from
the tail, so the oldest request always makes progress and none starves; no request is admitted in a step
that preempted one. A request whose prompt plus ``max_tokens`` cannot fit in all the blocks is refused
when it is submitted (`Engine.submit`), so every request admitted can finish.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from m1model.cache import EnginePool


class Request(Protocol):
    """What the scheduler reads and sets of an engine request (`m1model.engine.Request`)."""

    num_tokens: int  # prompt + generated so far
    num_computed: int  # of those, how many are in the cache
    slot: int  # -1 when it holds none
    blocks: list[int]
    preemptions: int


class Scheduler:
    def __init__(self, max_num_seqs: int, max_num_batched_tokens: int) -> None:
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.preemptions = 0
        self.pool: EnginePool | None = None  # the engine sets it before the first step

    def add(self, req: Request) -> None:
        self.waiting.append(req)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> list[tuple[Request, int]]:
        """(request, tokens to compute this step) in admission order, at most the budget in all."""
        pool = self.pool
        budget = self.max_num_batched_tokens
        scheduled: list[tuple[Request, int]] = []
        preempted = False
        i = 0
        while i < len(self.running) and budget:
            req = self.running[i]
            n = min(req.num_tokens - req.num_computed, budget)
            while not pool.grow(req.blocks, req.num_computed + n):
                victim = self.running.pop()
                self._preempt(victim)
                preempted = True
                if victim is req:
                    break
            if req.slot < 0:  # it was the newest running request and has just been preempted
                break
            scheduled.append((req, n))
            budget -= n
            i += 1
        while self.waiting and budget and not preempted and len(self.running) < self.max_num_seqs:
            req = self.waiting[0]
            n = min(req.num_tokens - req.num_computed, budget)
            if not pool.free_slots or not pool.grow(req.blocks, n):
                break  # first come, first served: nobody overtakes the head of the queue
            self.waiting.popleft()
            req.slot = pool.take_slot()
            self.running.append(req)
            scheduled.append((req, n))
            budget -= n
        return scheduled

    def _preempt(self, req: Request) -> None:
        self._release(req)
        req.num_computed = 0
        req.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(req)

    def _release(self, req: Request) -> None:
        self.pool.release(req.slot, req.blocks)
        req.slot, req.blocks = -1, []

    def finish(self, req: Request) -> None:
        """Take a finished or aborted request out of the queues and free its slot and blocks."""
        if req in self.running:
            self.running.remove(req)
        elif req in self.waiting:
            self.waiting.remove(req)
        if self.pool is not None:
            self._release(req)
