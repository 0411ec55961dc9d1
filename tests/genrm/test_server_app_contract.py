"""The model server's app as built: its settings reach the engine and the batcher, the batcher runs for the
app's lifetime, /v1/models is OpenAI's list object. Each test builds its own app,
so what building does is part of the test (the session's `served` app is built once, before any test)."""

from __future__ import annotations

import socket
import time

import httpx

from m1model.serving import ServerSettings, app_from_checkpoint, background, free_port


def test_settings_reach_the_engine_and_the_loop(tiny_checkpoint):
    app = app_from_checkpoint(
        tiny_checkpoint,
        ServerSettings(model_name="own", max_num_seqs=3, max_num_batched_tokens=40, kv_cache_tokens=512),
    )
    service = app.state.service
    assert service.engine.max_num_seqs == 3 and service.engine.scheduler.max_num_batched_tokens == 40
    assert service.batcher.engine is service.engine
    assert service.max_len == 512  # a request can hold no more than the whole KV cache


def test_models_is_the_openai_list_object_and_the_batcher_serves_while_the_app_runs(tiny_checkpoint):
    before = int(time.time())
    app = app_from_checkpoint(tiny_checkpoint)  # no settings: named after the checkpoint's folder
    with background(app) as url:
        got = httpx.get(f"{url}/v1/models", timeout=30).json()
        card = got["data"][0]
        assert got["object"] == "list" and len(got["data"]) == 1
        assert card["id"] == "tiny-m1" and card["object"] == "model" and card["owned_by"] == "m1-pipeline"
        assert before <= card["created"] <= int(time.time())
        context = app.state.service.model.config.max_position_embeddings
        assert card["max_model_len"] == min(context, app.state.service.engine.pool.capacity_tokens)
        r = httpx.post(
            f"{url}/v1/completions",
            json={"model": "tiny-m1", "prompt": "the quick", "max_tokens": 2},
            timeout=60,
        )
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1
        assert app.state.service.batcher._thread is not None  # started by the app's lifespan
    assert app.state.service.batcher._thread is None  # and stopped with it


def test_free_port_is_free_on_loopback_by_default():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
