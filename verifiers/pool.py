"""Score items in worker processes, with a hard per-item timeout.

A request's items are split into one chunk per worker and each chunk is one task in a pebble process
pool, so IPC is paid per chunk, not per item, and a verifier sees batches (math deduplicates them).
When a chunk runs past the per-item timeout, or its worker dies, pebble kills that worker and starts a
fresh one, and each item of the chunk is retried alone with the full timeout: the slow or hanging item
(an answer like ``9^{9^{9}}`` that SymPy tries to evaluate, a program that ignores signals) ends as a
reward 0 with a timeout error, its chunk-mates are scored, and other requests keep flowing on the
other workers meanwhile. Verifier instances live in the workers and are reused, so caches stay warm.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import CancelledError, Future, TimeoutError
from typing import Any

from pebble import ProcessExpired, ProcessPool

from verifiers.base import Registry, Reward, Verifier, default_registry, verify_safely

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
            # pebble marks a pool broken when it could not start workers; replace it once and retry
            self._pool.stop()
            self._pool = self._new_pool()
            return self._pool.schedule(score_items, args=args, timeout=timeout_s)

    async def score(
        self, name: str, options: dict[str, Any], items: Sequence[Any], timeout_s: float
    ) -> list[Reward]:
        key = options_key(options)
        size = max(1, -(-len(items) // self.workers))
        chunks = [list(items[i : i + size]) for i in range(0, len(items), size)]
        futures = [
            asyncio.wrap_future(self._schedule(name, key, chunk, timeout_s=timeout_s)) for chunk in chunks
        ]
        results = await asyncio.gather(*futures, return_exceptions=True)
        rewards: list[Reward] = []
        for chunk, result in zip(chunks, results, strict=True):
            if isinstance(result, list):
                rewards += [Reward(*r) for r in result]
            elif len(chunk) > 1 and isinstance(result, TimeoutError | ProcessExpired):
                rewards += await self._one_by_one(name, key, chunk, timeout_s)
            else:
                rewards.append(_failure(result, timeout_s))
        return rewards

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
