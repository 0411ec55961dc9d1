"""Score items one by one in worker processes, with a hard per-item timeout.

Each item is its own task in a pebble process pool: a slow or hanging item (an answer like
``9^{9^{9}}`` that SymPy tries to evaluate, a program that ignores signals) occupies one worker until
its timeout, when pebble kills that worker and starts a fresh one; every other item keeps flowing.
Verifier instances live in the workers and are reused across tasks, so their caches stay warm.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import CancelledError, TimeoutError
from typing import Any

from pebble import ProcessExpired, ProcessPool

from verifiers.base import Registry, Reward, Verifier, default_registry, verify_safely

# Per-worker state, built by the pool initializer.
_registry: Registry | None = None
_verifiers: dict[tuple[str, str], Verifier] = {}


def _init_worker(plugin_dirs: Sequence[str]) -> None:
    global _registry
    _registry = default_registry(plugin_dirs)


def options_key(options: dict[str, Any]) -> str:
    """A hashable, picklable form of a verifier's options."""
    return json.dumps(options, sort_keys=True)


def score_item(name: str, options: str, item: Any) -> tuple[float, dict[str, Any]]:
    """Runs in a worker: one item through one verifier; never raises for a bad item."""
    if not isinstance(item, dict):
        return 0.0, {"error": f"item is not a JSON object (got {type(item).__name__})"}
    key = (name, options)
    if key not in _verifiers:
        assert _registry is not None, "worker not initialised"
        _verifiers[key] = _registry.get(name, **json.loads(options))
    (reward,) = verify_safely(_verifiers[key], [item])
    return reward.reward, reward.details


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
            max_workers=self.workers, initializer=_init_worker, initargs=(self.plugin_dirs,), context=self._context
        )

    def _schedule(self, name: str, key: str, item: Any, timeout_s: float):
        try:
            return self._pool.schedule(score_item, args=(name, key, item), timeout=timeout_s)
        except RuntimeError:
            # pebble marks a pool broken when it could not start workers; replace it once and retry
            self._pool.stop()
            self._pool = self._new_pool()
            return self._pool.schedule(score_item, args=(name, key, item), timeout=timeout_s)

    async def score(self, name: str, options: dict[str, Any], items: Sequence[Any], timeout_s: float) -> list[Reward]:
        key = options_key(options)
        futures = [self._schedule(name, key, item, timeout_s) for item in items]
        results = await asyncio.gather(*(asyncio.wrap_future(f) for f in futures), return_exceptions=True)
        return [_as_reward(result, timeout_s) for result in results]

    def close(self) -> None:
        self._pool.stop()
        self._pool.join()


def _as_reward(result: Any, timeout_s: float) -> Reward:
    if isinstance(result, tuple):
        return Reward(*result)
    if isinstance(result, TimeoutError):
        return Reward.error(f"timed out after {timeout_s:g}s", timeout=True)
    if isinstance(result, ProcessExpired):
        return Reward.error(f"worker process died (exit code {result.exitcode}) while scoring this item")
    if isinstance(result, CancelledError):
        return Reward.error("cancelled: the service is shutting down")
    return Reward.error(f"{type(result).__name__}: {result}")
