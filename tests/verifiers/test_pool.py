"""The scoring pool in-process: `score_items` (the worker's function), chunking and batching of queued
requests, per-item timeouts, dead workers, the one-by-one fallback, and the failure rewards.

The pools here are real pebble pools over the forkserver; a plugin directory holds a probe verifier whose
details say which process scored an item and in what batch, so the scheduling is observable from outside.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from concurrent.futures import CancelledError

import psutil
import pytest
from pebble import ProcessExpired

from verifiers import pool as pool_module
from verifiers.base import Reward
from verifiers.pool import MIN_CHUNK, ScoringPool, _failure, options_key, score_items

PROBE = """
import os
import sys
import time
from pathlib import Path

from verifiers.base import Reward


class Probe:
    name, version = "probe", "1"

    def __init__(self, scale=1.0, log=None):
        self.scale, self.log = scale, log

    def verify(self, items):
        if self.log:  # one line per call with its batch size
            with open(self.log, "a") as f:
                f.write(f"{len(items)}\\n")
        for item in items:  # an attempt is counted before anything can hang or die
            if item.get("attempts"):
                with open(item["attempts"], "a") as f:
                    f.write("attempt\\n")
        for item in items:
            if item.get("die_once") and not os.path.exists(item["die_once"]):
                Path(item["die_once"]).touch()
                os._exit(3)
            if item.get("die"):
                os._exit(3)
            time.sleep(item.get("sleep", 0))
        preloaded = [m for m in ("verifiers.math", "verifiers.constraints") if m in sys.modules]
        details = {"batch": len(items), "pid": os.getpid(), "ppid": os.getppid(), "preloaded": preloaded}
        return [Reward(self.scale * len(item["response"]), dict(details)) for item in items]
"""


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("pool_plugins")
    (d / "probe.py").write_text(PROBE, encoding="utf-8")
    return str(d)


def run(coro, timeout: float = 20):
    """Drive a scenario; a scheduling bug that loses a request fails here instead of hanging the run."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def make_pool(workers: int, plugin_dir: str) -> ScoringPool:
    pool = ScoringPool(workers, [plugin_dir])
    run(pool.warm())
    return pool


@pytest.fixture
def pool(plugin_dir):
    # One pool per test: after the first, the forkserver starts a pool's workers in milliseconds.
    p = make_pool(2, plugin_dir)
    yield p
    p.close()


def items(*lengths: int, **extra) -> list[dict]:
    """Items whose probe reward is their response length, so a reward names its item."""
    return [{"response": "x" * n, **extra} for n in lengths]


def worker_pids() -> set[int]:
    """Live worker processes: the forkserver's children."""
    servers = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    return {w.pid for s in servers for w in s.children() if w.status() != psutil.STATUS_ZOMBIE}


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# -- the worker side, in this process -------------------------------------------------------------------


def test_score_items_scores_objects_as_one_batch_and_rejects_the_rest(plugin_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "_registry", None)
    monkeypatch.setattr(pool_module, "_verifiers", {})
    pool_module._init_worker([plugin_dir])  # what the pool's initializer does in each worker
    assert pool_module._ping() is True

    log = tmp_path / "calls"
    out = score_items(
        "probe", options_key({"log": str(log)}), [{"response": "abc"}, "text", 7, {"response": ""}]
    )
    assert [reward for reward, _ in out] == [3.0, 0.0, 0.0, 0.0]
    assert out[0][1]["batch"] == 2 and out[3][1]["batch"] == 2  # the two objects, in one call
    assert out[1][1] == {"error": "item is not a JSON object (got str)"}
    assert out[2][1] == {"error": "item is not a JSON object (got int)"}
    assert lines(log) == ["2"]

    # a chunk without one object never reaches the verifier
    assert score_items("probe", options_key({"log": str(log)}), [None]) == [
        (0.0, {"error": "item is not a JSON object (got NoneType)"})
    ]
    assert lines(log) == ["2"]

    # one verifier instance per (name, options): other options are another instance
    assert score_items("probe", options_key({"scale": 2.0}), [{"response": "abc"}])[0][0] == 6.0
    assert score_items("probe", options_key({}), [{"response": "abc"}])[0][0] == 3.0


def test_score_items_needs_an_initialised_worker(monkeypatch):
    monkeypatch.setattr(pool_module, "_registry", None)
    monkeypatch.setattr(pool_module, "_verifiers", {})
    assert pool_module._ping() is False
    with pytest.raises(AssertionError, match="^worker not initialised$"):
        score_items("probe", "{}", [{"response": "a"}])


def test_options_key_is_canonical_json():
    assert options_key({"b": 1, "a": [2, {"d": 0, "c": 1}]}) == '{"a": [2, {"c": 1, "d": 0}], "b": 1}'
    assert options_key({"a": 1, "b": 2}) == options_key({"b": 2, "a": 1})
    assert options_key({}) == "{}"


@pytest.mark.parametrize(
    ("failure", "reward"),
    [
        (TimeoutError(), Reward(0.0, {"error": "timed out after 2.5s", "timeout": True})),
        (
            ProcessExpired("Abnormal termination", code=-9),
            Reward(0.0, {"error": "worker process died (exit code -9) while scoring this item"}),
        ),
        (CancelledError(), Reward(0.0, {"error": "cancelled: the service is shutting down"})),
        (
            RuntimeError("The Pool is not active"),
            Reward(0.0, {"error": "RuntimeError: The Pool is not active"}),
        ),
    ],
)
def test_failure_rewards_say_what_happened(failure, reward):
    assert _failure(failure, 2.5) == reward


# -- scheduling ----------------------------------------------------------------------------------------


def test_requests_are_chunked_per_free_worker_in_order(pool):
    async def scenario():
        assert await pool.score("probe", {}, [], 5) == []
        small = await pool.score("probe", {}, items(1, 2, 3), 5)  # under MIN_CHUNK per worker: one chunk
        large = await pool.score("probe", {}, items(*range(20)), 5)  # two chunks of 10
        odd = await pool.score("probe", {}, items(*range(2 * MIN_CHUNK + 1)), 5)  # 17 items: 9 + 8
        scaled = await pool.score("probe", {"scale": 0.5}, items(4), 5)
        return small, large, odd, scaled

    small, large, odd, scaled = run(scenario())
    assert [r.reward for r in small] == [1.0, 2.0, 3.0] and {r.details["batch"] for r in small} == {3}
    assert [r.reward for r in large] == [float(n) for n in range(20)]
    assert [r.details["batch"] for r in large] == [10] * 20
    assert [r.reward for r in odd] == [float(n) for n in range(17)]
    assert [r.details["batch"] for r in odd] == [9] * 9 + [8] * 8
    assert scaled[0].reward == 2.0
    # the workers come from the forkserver, never forked from this (possibly multi-threaded) process
    assert os.getpid() not in {r.details["ppid"] for r in large + small}
    # ... which imported the built-in verifiers once, so that a replacement worker starts in milliseconds
    assert large[0].details["preloaded"] == ["verifiers.math", "verifiers.constraints"]


def test_requests_merge_while_workers_are_busy(pool):
    """A request that arrives while every worker is busy waits, and joins the others of its verifier and
    options in the next batch; the number of chunks in flight never exceeds the workers."""

    async def scenario():
        # one worker busy with a slow item; a large request then gets only the free worker: one chunk
        slow = asyncio.ensure_future(pool.score("probe", {}, items(5, sleep=0.6), 5))
        await asyncio.sleep(0.2)
        one_free = await pool.score("probe", {}, items(*range(20)), 5)
        await slow
        # both busy (two timeouts: two keys, so two chunks): the requests that arrive meanwhile are merged into one batch per (verifier, options)
        busy = [asyncio.ensure_future(pool.score("probe", {}, items(6, sleep=0.6), t)) for t in (5, 6)]
        await asyncio.sleep(0.2)
        waiting = [pool.score("probe", {}, items(1, 2), 5), pool.score("probe", {}, items(3), 5)]
        other = pool.score("probe", {"scale": 2.0}, items(4), 5)
        merged = await asyncio.gather(*waiting, other)
        await asyncio.gather(*busy)
        # every chunk has been accounted back: a large request is split over both workers again
        after = await pool.score("probe", {}, items(*range(40)), 5)
        return one_free, merged, after

    one_free, (first, second, other), after = run(scenario())
    assert [r.reward for r in one_free] == [float(n) for n in range(20)]
    assert {r.details["batch"] for r in one_free} == {20}
    assert [r.reward for r in first + second] == [1.0, 2.0, 3.0]
    assert {r.details["batch"] for r in first + second} == {3}
    assert other[0].reward == 8.0 and other[0].details["batch"] == 1
    assert [r.reward for r in after] == [float(n) for n in range(40)]
    assert {r.details["batch"] for r in after} == {20}


def test_a_one_worker_pool_runs_one_process(plugin_dir):
    before = worker_pids()
    pool = make_pool(1, plugin_dir)
    try:
        deadline = time.monotonic() + 10
        while len(started := worker_pids() - before) != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(started) == 1
        rewards = run(pool.score("probe", {}, items(*range(30)), 5))
        assert {r.details["batch"] for r in rewards} == {30}  # one worker: one chunk
        assert {r.details["pid"] for r in rewards} == started
    finally:
        pool.close()


# -- timeouts and dead workers -------------------------------------------------------------------------


def test_a_timed_out_item_fails_alone_and_its_chunk_mates_are_rescored(pool, tmp_path):
    lone, slow, mate = tmp_path / "lone", tmp_path / "slow", tmp_path / "mate"

    async def scenario():
        alone = await pool.score("probe", {}, items(3, sleep=10, attempts=str(lone)), 0.8)
        # a chunk with a hanging item: killed at the timeout, then each item is tried alone
        chunk = items(2, sleep=10, attempts=str(slow)) + items(3, attempts=str(mate))
        mixed = asyncio.ensure_future(pool.score("probe", {}, chunk, 0.7))
        await asyncio.sleep(0.2)
        quick = await pool.score("probe", {}, items(5), 5)  # the other worker keeps serving meanwhile
        quick_first = not mixed.done()
        return alone, await mixed, quick, quick_first

    alone, mixed, quick, quick_first = run(scenario())
    assert alone == [Reward(0.0, {"error": "timed out after 0.8s", "timeout": True})]
    assert len(lines(lone)) == 1  # a lone item that timed out would time out again: not retried
    assert mixed[0] == Reward(0.0, {"error": "timed out after 0.7s", "timeout": True})
    assert mixed[1].reward == 3.0 and mixed[1].details["batch"] == 1
    assert len(lines(slow)) == 2 and len(lines(mate)) == 2  # the chunk, then each item alone
    assert quick[0].reward == 5.0 and quick_first


def test_a_dead_worker_costs_only_its_culprit(pool, tmp_path):
    once = tmp_path / "died-once"

    async def scenario():
        culprit = await pool.score("probe", {}, items(2) + items(1, die=True) + items(4), 5)
        # a worker killed under a lone item (the OOM killer, say): the item gets one more try
        retried = await pool.score("probe", {}, items(3, die_once=str(once)), 5)
        return culprit, retried

    culprit, retried = run(scenario())
    assert [r.reward for r in culprit] == [2.0, 0.0, 4.0]
    assert culprit[1].details == {"error": "worker process died (exit code 3) while scoring this item"}
    assert once.exists() and retried[0].reward == 3.0 and "error" not in retried[0].details


def test_a_worker_killed_while_idle_is_replaced(pool):
    """pebble gives up a pool whose worker dies while no task runs (noxdafox/pebble#70): the next task
    goes to a new pool, with its arguments and its timeout."""

    def kill_an_idle_worker() -> int:
        (r,) = run(pool.score("probe", {}, items(2), 5))
        victim = psutil.Process(r.details["pid"])
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        time.sleep(0.3)  # pebble notices the death and marks its pool broken
        return r.details["pid"]

    dead = kill_an_idle_worker()
    again = run(pool.score("probe", {}, items(*range(20)), 5))
    assert [r.reward for r in again] == [float(n) for n in range(20)]
    assert {r.details["batch"] for r in again} == {10}  # scored as chunks, not item by item after a crash
    assert dead not in {r.details["pid"] for r in again}

    kill_an_idle_worker()
    assert run(pool.score("probe", {}, items(1, sleep=10), 0.5)) == [
        Reward(0.0, {"error": "timed out after 0.5s", "timeout": True})
    ]


def test_a_request_the_workers_cannot_serve_fails_every_waiting_request(pool):
    async def scenario():
        unknown = [pool.score("nope", {}, items(1), 5), pool.score("nope", {}, items(2, 3), 5)]
        results = await asyncio.gather(*unknown, return_exceptions=True)
        bad_options = await asyncio.gather(
            pool.score("probe", {"bogus": 1}, items(1), 5), return_exceptions=True
        )
        after = await pool.score("probe", {}, items(2), 5)  # the pool keeps serving
        return results, bad_options, after

    results, (bad_options,), after = run(scenario())
    assert all(isinstance(r, KeyError) and "unknown verifier 'nope'" in str(r) for r in results)
    assert isinstance(bad_options, TypeError) and "bogus" in str(bad_options)
    assert after[0].reward == 2.0
