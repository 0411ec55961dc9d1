"""Score items in worker processes, with a hard per-item timeout.

Requests are batched: `score` queues a request's items, and whenever a worker is free the queued items of
one (verifier, options, timeout) are merged, split into at most one chunk per free worker, and each chunk
is one task in a pebble process pool. So IPC is paid per chunk, not per item or per request (an RL client
sends many small requests at once), and a verifier sees batches (math deduplicates them). While every
worker is busy, arriving requests wait in the queue and the next batch grows: latency stays that of one
chunk at low load, throughput that of large batches at high load.
When a chunk runs past the per-item timeout, or its worker dies, pebble kills that worker and starts a
fresh one, and each item of the chunk is retried alone with the full timeout: the slow or hanging item
(an answer like ``9^{9^{9}}`` that SymPy tries to evaluate, a program that ignores signals) ends as a
reward 0 with a timeout error, its chunk-mates are scored, and other requests keep flowing on the
other workers meanwhile. Verifier instances live in the workers and are reused, so caches stay warm.
"""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import CancelledError, Future, TimeoutError
from typing import Any

from pebble import ProcessExpired, ProcessPool

from verifiers.base import Registry, Reward, Verifier, default_registry, verify_safely

MIN_CHUNK = 8  # fewer items than this per worker: one chunk; IPC would cost more than parallelism gains

# Per-worker state, built by the pool initializer.
_registry: Registry | None = None
_verifiers: dict[tuple[str, str], Verifier] = {}


def _init_worker(plugin_dirs: Sequence[str]) -> None:
    global _registry
    _registry = default_registry(plugin_dirs)


def _ping() -> bool:
    return _registry is not None


def options_key(options: dict[str, Any]) -> str:
    """A hashable, picklable form of a verifier's options."""
    return json.dumps(options, sort_keys=True)


def score_items(name: str, options: str, items: list[Any]) -> list[tuple[float, dict[str, Any]]]:
    """Runs in a worker: a chunk of items through one verifier; never raises for a bad item."""
    key = (name, options)
    if key not in _verifiers:
        assert _registry is not None, "worker not initialised"
        _verifiers[key] = _registry.get(name, **json.loads(options))
    objects = [item for item in items if isinstance(item, dict)]
    rewards = iter(verify_safely(_verifiers[key], objects) if objects else [])
    out = []
    for item in items:
        if isinstance(item, dict):
            reward = next(rewards)
            out.append((reward.reward, reward.details))
        else:
            out.append((0.0, {"error": f"item is not a JSON object (got {type(item).__name__})"}))
    return out


class ScoringPool:
    def __init__(self, workers: int, plugin_dirs: Sequence[str] = ()) -> None:
        # forkserver: the server process forks from a clean, single-threaded state with the verifier
        # modules preloaded, so a replacement worker (after a timeout kill) starts in milliseconds and
        # never inherits locks from the web server's threads.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["verifiers.pool", "verifiers.math", "verifiers.constraints"])
        self._context = context
        self.workers = workers
        self.plugin_dirs = list(plugin_dirs)
        self._pool = self._new_pool()
        self._queue: dict[tuple[str, str, float], list[tuple[list[Any], asyncio.Future]]] = {}
        self._busy = 0  # chunks in flight
        self._kicked = False

    def _new_pool(self) -> ProcessPool:
        return ProcessPool(
            max_workers=self.workers,
            initializer=_init_worker,
            initargs=(self.plugin_dirs,),
            context=self._context,
        )

    def _schedule(self, *args: Any, timeout_s: float) -> Future:
        try:
            return self._pool.schedule(score_items, args=args, timeout=timeout_s)
        except RuntimeError:
            # pebble marks a pool broken when it could not start workers, or when a worker was killed
            # while none was busy (noxdafox/pebble#70): replace it once and retry. join() stops the
            # broken pool's surviving workers, which stop() alone would leave running.
            self._pool.stop()
            self._pool.join()
            self._pool = self._new_pool()
            return self._pool.schedule(score_items, args=args, timeout=timeout_s)

    async def score(
        self, name: str, options: dict[str, Any], items: Sequence[Any], timeout_s: float
    ) -> list[Reward]:
        if not items:
            return []
        future: asyncio.Future[list[Reward]] = asyncio.get_running_loop().create_future()
        self._queue.setdefault((name, options_key(options), timeout_s), []).append((list(items), future))
        self._kick()
        return await future

    def _kick(self) -> None:
        """Dispatch queued requests on the next turn of the event loop (requests that arrive meanwhile join)."""
        if not self._kicked:
            self._kicked = True
            asyncio.get_running_loop().call_soon(self._dispatch)

    def _dispatch(self) -> None:
        self._kicked = False
        while self._queue and self._busy < self.workers:
            key = next(iter(self._queue))  # oldest first
            requests = self._queue.pop(key)
            n = sum(len(items) for items, _ in requests)
            chunks = min(self.workers - self._busy, max(1, math.ceil(n / MIN_CHUNK)))
            self._busy += chunks
            asyncio.get_running_loop().create_task(self._run(key, requests, chunks))

    async def _run(
        self, key: tuple[str, str, float], requests: list[tuple[list[Any], asyncio.Future]], n: int
    ):
        name, options, timeout_s = key
        items = [item for batch, _ in requests for item in batch]
        size = math.ceil(len(items) / n)
        try:
            parts = await asyncio.gather(
                *(
                    self._chunk(name, options, items[i : i + size], timeout_s)
                    for i in range(0, len(items), size)
                )
            )
            rewards = iter([r for part in parts for r in part])
            for batch, future in requests:
                out = [next(rewards) for _ in batch]
                if not future.done():  # the client may have gone away
                    future.set_result(out)
        except Exception as exc:  # noqa: BLE001 - hand any failure to the waiting requests, never lose it
            for _, future in requests:
                if not future.done():
                    future.set_exception(exc)
        finally:
            self._busy -= n
            self._kick()

    async def _chunk(self, name: str, key: str, chunk: list[Any], timeout_s: float) -> list[Reward]:
        try:
            result = await asyncio.wrap_future(self._schedule(name, key, chunk, timeout_s=timeout_s))
        except (TimeoutError, ProcessExpired) as exc:
            # A dead worker may not be the items' fault (the OOM killer, an operator's kill): each item
            # gets one more try alone, on a fresh worker. A lone item that timed out would time out again.
            if isinstance(exc, ProcessExpired) or len(chunk) > 1:
                return await self._one_by_one(name, key, chunk, timeout_s)
            return [_failure(exc, timeout_s)]
        except (CancelledError, RuntimeError) as exc:
            return [_failure(exc, timeout_s)] * len(chunk)
        return [Reward(*r) for r in result]

    async def _one_by_one(self, name: str, key: str, chunk: list[Any], timeout_s: float) -> list[Reward]:
        """A chunk failed: find the item(s) responsible by giving each its own task and timeout."""
        futures = [
            asyncio.wrap_future(self._schedule(name, key, [item], timeout_s=timeout_s)) for item in chunk
        ]
        results = await asyncio.gather(*futures, return_exceptions=True)
        return [Reward(*r[0]) if isinstance(r, list) else _failure(r, timeout_s) for r in results]

    async def warm(self) -> None:
        """Start every worker now, so the first requests do not pay for process start-up."""
        futures = [asyncio.wrap_future(self._pool.schedule(_ping)) for _ in range(self.workers)]
        await asyncio.gather(*futures)

    def close(self) -> None:
        self._pool.stop()
        self._pool.join()


def _failure(result: BaseException, timeout_s: float) -> Reward:
    if isinstance(result, TimeoutError):
        return Reward.error(f"timed out after {timeout_s:g}s", timeout=True)
    if isinstance(result, ProcessExpired):
        return Reward.error(f"worker process died (exit code {result.exitcode}) while scoring this item")
    if isinstance(result, CancelledError):
        return Reward.error("cancelled: the service is shutting down")
    return Reward.error(f"{type(result).__name__}: {result}")
