"""The server's engine loop (m1model/serving/batcher.py) over a small real engine: late arrivals join the
running batch, each request gets its own limits and the answer it gets alone, stop checks end sequences in
the engine, cancelled streams free their slots, a refused request or a failing step fails only its jobs."""

from __future__ import annotations

import asyncio

from m1model import Engine, SamplingParams
from m1model.policy import build_model
from m1model.serving.batcher import EngineLoop, LoopStats

GREEDY = SamplingParams(temperature=0, max_tokens=6)


def _engine(**kw) -> Engine:
    model = build_model(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, softmax_every=2, head_dim=8, initializer_range=0.1
    ).eval()
    return Engine(model, **kw)


def _serve(loop: EngineLoop, *calls):
    """Run the coroutines ``call(loop)`` concurrently against the started loop; results or exceptions."""

    async def main():
        return await asyncio.wait_for(asyncio.gather(*(c(loop) for c in calls), return_exceptions=True), 60)

    loop.start()
    try:
        return asyncio.run(main())
    finally:
        loop.stop()


def test_the_engine_thread_is_a_named_daemon_and_stops_when_asked():
    b = EngineLoop(_engine())
    b.start()
    assert b._thread.daemon and b._thread.name == "m1-engine"
    thread = b._thread
    b.stop()
    assert b._thread is None and not thread.is_alive()


def test_a_late_request_joins_the_running_batch_and_leaves_before_the_long_one():
    """The short request arrives while the long one generates, shares its steps and is answered while
    the long one still runs; both answers are the ones they get alone."""
    b = EngineLoop(_engine())
    long_p, short_p = (
        SamplingParams(temperature=0, max_tokens=60),
        SamplingParams(temperature=0, max_tokens=3),
    )
    finished: list[str] = []

    async def long(loop):
        out = await loop.generate([[5, 6, 7]], long_p)
        finished.append("long")
        return out

    async def short(loop):
        while loop.stats.steps < 5:  # the long request is generating
            await asyncio.sleep(0.001)
        out = await loop.generate([[9, 9]], short_p)
        finished.append("short")
        return out

    (lo,), (sh,) = _serve(b, long, short)
    assert finished == ["short", "long"]
    assert b.stats.steps == 60 and b.stats.as_dict()["mean_batch"] > 1  # the short one rode along
    alone = _engine()
    assert lo.token_ids == alone.generate([[5, 6, 7]], long_p)[0].token_ids
    assert sh.token_ids == alone.generate([[9, 9]], short_p)[0].token_ids


def test_requests_with_different_settings_each_get_their_own_limits_and_answers():
    b = EngineLoop(_engine())
    asks = [
        ([[1], [2]], SamplingParams(temperature=0, max_tokens=3)),
        ([[3]], SamplingParams(temperature=0, max_tokens=8)),
        ([[4, 4]], SamplingParams(temperature=0.8, max_tokens=5, seed=3)),
    ]
    got = _serve(b, *(lambda loop, a=a: loop.generate(*a) for a in asks))
    assert [[len(c.token_ids) for c in g] for g in got] == [[3, 3], [8], [5]]
    alone = _engine()
    for (prompts, params), g in zip(asks, got, strict=True):
        assert [c.token_ids for c in g] == [c.token_ids for c in alone.generate(prompts, params)]


def test_stopping_finishes_the_requests_already_taken():
    b = EngineLoop(_engine())

    async def main():
        tasks = [asyncio.create_task(b.generate([[i + 1]], GREEDY)) for i in range(2)]
        await asyncio.sleep(0)
        b._inbox.put(None)  # a stop queued behind the two requests
        b.start()
        return await asyncio.wait_for(asyncio.gather(*tasks), 30)

    out = asyncio.run(main())
    b._thread.join(timeout=30)
    assert [len(o[0].token_ids) for o in out] == [6, 6] and not b._thread.is_alive()


def test_a_refused_request_gets_its_error_and_the_others_their_answers():
    b = EngineLoop(_engine(block_size=4, kv_cache_tokens=16))

    async def good(loop):
        return await loop.generate([[1, 2]], GREEDY)

    async def bad(loop):  # 20 prompt tokens cannot fit 16 KV positions
        return await loop.generate([[3] * 20], GREEDY)

    ok, refused = _serve(b, good, bad)
    assert len(ok[0].token_ids) == 6
    assert isinstance(refused, ValueError) and "KV cache of 16" in str(refused)


def test_a_failing_step_fails_its_jobs_and_the_loop_keeps_serving(monkeypatch):
    engine = _engine()
    b = EngineLoop(engine)
    real = engine.model.model.forward
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return real(*args, **kwargs)

    monkeypatch.setattr(engine.model.model, "forward", flaky)

    async def first(loop):
        return await loop.generate([[4, 4]], GREEDY)

    async def later(loop):
        while calls["n"] < 2:
            await asyncio.sleep(0.001)
        return await loop.generate([[7]], GREEDY)

    failed, ok = _serve(b, first, later)
    assert isinstance(failed, RuntimeError) and len(ok[0].token_ids) == 6
    assert engine.stats()["slots_used"] == 0


def test_a_stop_check_ends_the_sequence_in_the_engine():
    engine = _engine()
    free = engine.generate([[3, 1, 4]], SamplingParams(temperature=0, max_tokens=12))[0].token_ids
    b = EngineLoop(engine)

    async def stopped(loop):  # stop once the third token is out
        return await loop.generate(
            [[3, 1, 4]], SamplingParams(temperature=0, max_tokens=12), stop=lambda ids: len(ids) >= 3
        )

    ((c,),) = _serve(b, stopped)
    assert c.token_ids == free[:3] and c.finish_reason == "stop"
    assert engine.counters["generated_tokens"] == 12 + 3  # the 9 tokens after the stop were never made


def test_a_stream_yields_tokens_as_they_come_and_cancelling_it_frees_the_slot():
    engine = _engine()
    b = EngineLoop(engine)

    async def consume(loop):
        seen = []
        async for d in loop.stream([[8, 8, 8]], SamplingParams(temperature=0, max_tokens=50)):
            seen.append(d)
            if len(seen) == 3:
                break  # the client goes away
        await asyncio.sleep(0.2)  # the abort reaches the engine thread
        return seen

    (seen,) = _serve(b, consume)
    assert [len(d.token_ids) for d in seen] == [1, 1, 1] and all(d.finish_reason is None for d in seen)
    assert engine.stats()["slots_used"] == 0 and not engine.has_unfinished()
    assert engine.counters["generated_tokens"] < 50


def test_loop_metrics_show_running_waiting_and_preempted():
    """Two requests that cannot both fit the KV cache: one is preempted and recomputed; the loop's
    metrics count it, and both answers are what they are alone."""
    engine = _engine(block_size=4, kv_cache_tokens=40)
    b = EngineLoop(engine)
    params = SamplingParams(temperature=0, max_tokens=24)
    seen: list[dict] = []
    step = engine.step

    def watched_step():  # what /metrics would show between two steps, read in the engine thread
        seen.append(b.metrics())
        return step()

    engine.step = watched_step
    got = _serve(b, lambda loop: loop.generate([[1, 2], [3, 4]], params))
    assert b.metrics()["preemptions_total"] >= 1 and b.metrics()["recomputed_tokens_total"] > 0
    assert any(m["preempted"] == 1 and m["running"] == 1 for m in seen)
    assert all(m["kv_blocks_used"] <= m["kv_blocks_total"] == 10 for m in seen)
    alone = _engine()
    assert [c.token_ids for c in got[0]] == [
        alone.generate([p], params)[0].token_ids for p in ([1, 2], [3, 4])
    ]


def test_loop_stats_mean_batch_is_sequences_per_step():
    assert LoopStats(requests=2, steps=4, step_sequences=12).as_dict()["mean_batch"] == 3.0
    assert LoopStats().as_dict()["mean_batch"] == 0.0
