"""The model server's request handling and batching, unit by unit: chat roles and the template, prompt
checks, finish reasons, how generation errors become API errors, token bytes, the error body, and the
dynamic batcher's gathering (a recording engine stands in for the model)."""

from __future__ import annotations

import asyncio
import time

import pytest

from m1model.engine import Completion, SamplingParams
from m1model.serving import ServerSettings, app_from_checkpoint
from m1model.serving.batcher import BatchStats, DynamicBatcher, Generated
from m1model.serving.protocol import APIError, ChatRequest, CompletionRequest


@pytest.fixture(scope="module")
def service(tiny_checkpoint):
    return app_from_checkpoint(tiny_checkpoint, ServerSettings(model_name="tiny")).state.service


def _chat(*messages: tuple[str, str]) -> ChatRequest:
    return ChatRequest(model="tiny", messages=[{"role": r, "content": c} for r, c in messages])


def test_a_developer_message_is_a_system_message_and_the_prompt_asks_for_the_reply(service):
    tok = service.tokenizer
    expected = tok.apply_chat_template(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi fox"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    got = service.encode_chat(_chat(("developer", "be brief"), ("user", "hi fox")))
    assert got == tok.encode(expected, add_special_tokens=False)
    assert tok.decode(got).endswith("<|assistant|>\n")


def test_a_template_that_rejects_the_messages_is_a_400_on_messages(service, monkeypatch):
    def reject(*args, **kwargs):
        raise ValueError("roles must alternate")

    monkeypatch.setattr(service.tokenizer, "apply_chat_template", reject)
    with pytest.raises(APIError) as err:
        service.encode_chat(_chat(("user", "hi")))
    assert err.value.status == 400 and err.value.param == "messages"
    assert err.value.message == "messages: the chat template rejected them: roles must alternate"


def test_ids_past_the_vocabulary_become_the_stop_token_or_zero(service, monkeypatch):
    full = service.encode_chat(_chat(("user", "hi fox")))
    monkeypatch.setattr(service, "vocab", 5)
    eos = service.stop_ids[0]
    assert service.encode_chat(_chat(("user", "hi fox"))) == [t if t < 5 else eos for t in full]
    monkeypatch.setattr(service, "stop_ids", ())
    assert service.encode_chat(_chat(("user", "hi fox"))) == [t if t < 5 else 0 for t in full]


def test_token_id_prompts_accept_zero_and_reject_ids_outside_the_vocabulary(service):
    assert service.encode_completion_prompts([0, 1, 2]) == [[0, 1, 2]]
    for bad in ([-1, 2], [service.vocab]):
        with pytest.raises(APIError) as err:
            service.encode_completion_prompts(bad)
        assert err.value.status == 400 and err.value.param == "prompt"


@pytest.mark.parametrize(
    ("engine", "api"), [("stop", "stop"), ("length", "length"), ("repetition", "length")]
)
def test_finish_reasons_follow_the_api(service, engine, api):
    done = service.finish(Generated(Completion([5, 6], [-0.1, -0.2], engine)), stops=[])
    assert done.finish_reason == api and done.token_ids == [5, 6]


class _Failing:
    def __init__(self, exc):
        self.exc = exc

    async def generate(self, *args, **kwargs):
        raise self.exc


def test_generation_errors_become_api_errors(service, monkeypatch):
    req = CompletionRequest(model="tiny", prompt="the quick")
    monkeypatch.setattr(service, "batcher", _Failing(ValueError("empty prompt")))
    with pytest.raises(APIError) as err:
        asyncio.run(service.run([[1]], req, 2, 0))
    assert (err.value.status, err.value.message, err.value.kind) == (
        400,
        "empty prompt",
        "invalid_request_error",
    )
    monkeypatch.setattr(service, "batcher", _Failing(RuntimeError("boom")))
    with pytest.raises(APIError) as err:
        asyncio.run(service.run([[1]], req, 2, 0))
    assert (err.value.status, err.value.message) == (500, "generation failed: RuntimeError: boom")
    assert err.value.kind == "server_error"


class _PlainDecoder:
    """The tokenizer with no byte-level decoder: a token's bytes are its decoded text's."""

    backend_tokenizer = None

    def __init__(self, tok):
        self._tok = tok

    def __getattr__(self, name):
        return getattr(self._tok, name)


def test_a_token_without_a_byte_level_decoder_is_its_decoded_text(service, monkeypatch):
    tok = service.tokenizer
    token = tok.encode("fox", add_special_tokens=False)[0]
    monkeypatch.setattr(service, "tokenizer", _PlainDecoder(tok))
    assert service.token_bytes(token) == tok.decode([token], skip_special_tokens=True).encode("utf-8") != b""


def test_api_errors_have_openais_body_and_kind():
    assert APIError(400, "bad", param="n").body() == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "n", "code": 400}
    }
    assert APIError(503, "down").kind == "server_error"
    assert APIError(404, "no", kind="model_not_found").kind == "model_not_found"


def test_batch_stats_mean_batch_is_sequences_per_engine_call():
    assert BatchStats(requests=2, sequences=6, engine_calls=2).as_dict()["mean_batch"] == 3.0
    assert BatchStats().as_dict()["mean_batch"] == 0.0


class _Recorder:
    """An engine that answers every prompt with one token and records each call's prompts."""

    model = None

    def __init__(self):
        self.calls: list[int] = []

    def generate(self, prompts, params):
        self.calls.append(len(prompts))
        return [Completion([7], [-0.5], "length") for _ in prompts]


PARAMS = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=1)


def test_the_engine_thread_is_a_named_daemon_and_stops_when_asked():
    b = DynamicBatcher(_Recorder())
    b.start()
    assert b._thread.daemon and b._thread.name == "m1-engine"
    thread = b._thread
    b.stop()
    assert b._thread is None and not thread.is_alive()


def test_a_batch_takes_requests_until_it_holds_max_batch_size_sequences():
    engine = _Recorder()
    b = DynamicBatcher(engine, max_batch_size=3, max_wait_ms=500)

    async def main():
        tasks = [asyncio.create_task(b.generate([[1], [2]], PARAMS)) for _ in range(3)]
        await asyncio.sleep(0)  # all three queued before the engine thread starts
        b.start()
        return await asyncio.wait_for(asyncio.gather(*tasks), 30)

    try:
        out = asyncio.run(main())
    finally:
        b.stop()
    assert [len(o) for o in out] == [2, 2, 2]
    assert engine.calls == [4, 2]  # 2 + 2 reaches 3: the third request waits for the next batch


def test_a_request_arriving_within_max_wait_joins_the_batch():
    engine = _Recorder()
    b = DynamicBatcher(engine, max_batch_size=2, max_wait_ms=5000)
    b.start()

    async def main():
        first = asyncio.create_task(b.generate([[1]], PARAMS))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(b.generate([[2]], PARAMS))
        return await asyncio.wait_for(asyncio.gather(first, second), 30)

    t0 = time.monotonic()
    try:
        asyncio.run(main())
    finally:
        b.stop()
    assert engine.calls == [2] and time.monotonic() - t0 < 5


def test_stopping_runs_the_requests_already_gathered():
    engine = _Recorder()
    b = DynamicBatcher(engine, max_batch_size=8, max_wait_ms=5000)

    async def main():
        tasks = [asyncio.create_task(b.generate([[i]], PARAMS)) for i in range(2)]
        await asyncio.sleep(0)
        b._queue.put(None)  # a stop queued behind the two requests
        b.start()
        return await asyncio.wait_for(asyncio.gather(*tasks), 30)

    out = asyncio.run(main())
    b._thread.join(timeout=30)
    assert [len(o) for o in out] == [1, 1] and engine.calls == [2] and not b._thread.is_alive()


def test_the_token_budget_is_what_the_context_leaves(service, monkeypatch):
    monkeypatch.setattr(service, "max_len", 10)
    assert service.budget([[1] * 7, [1] * 3], None, 16) == 3  # the longest prompt leaves 3
    assert service.budget([[1] * 9], None, 16) == 1  # one token of room is enough
    assert service.budget([[1] * 2], 5, 16) == 5
    with pytest.raises(APIError) as err:
        service.budget([[1] * 10], None, 16)
    assert (err.value.status, err.value.param) == (400, "prompt")
    assert err.value.message == "prompt has 10 tokens; the model's context is 10"


def test_an_unknown_model_is_a_404_on_model(service):
    for name in (None, "tiny", "default"):
        service.check_model(name)
    with pytest.raises(APIError) as err:
        service.check_model("gpt-9")
    assert (err.value.status, err.value.param, err.value.kind) == (404, "model", "model_not_found")


def test_a_stop_string_cuts_the_tokens_at_the_shortest_prefix_that_reaches_it(service):
    tok = service.tokenizer
    ids = tok.encode("the quick brown fox jumps over the lazy dog", add_special_tokens=False)
    done = service.finish(Generated(Completion(ids, [-0.1] * len(ids), "length")), stops=["fox"])
    shortest = next(
        k for k in range(1, len(ids) + 1) if "fox" in tok.decode(ids[:k], skip_special_tokens=True)
    )
    assert done.token_ids == ids[:shortest] and len(done.logprobs) == shortest
    assert done.finish_reason == "stop" and "fox" not in done.text and done.text.startswith("the quick")


class _Picky(_Recorder):
    """Fails every call that holds prompt [99]."""

    def generate(self, prompts, params):
        if [99] in prompts:
            self.calls.append(-len(prompts))
            raise ValueError("bad prompt")
        return super().generate(prompts, params)


def test_a_failing_request_gets_its_error_and_the_others_in_its_batch_their_answers():
    engine = _Picky()
    b = DynamicBatcher(engine, max_batch_size=8, max_wait_ms=5000)

    async def main():
        good = asyncio.create_task(b.generate([[1]], PARAMS))
        bad = asyncio.create_task(b.generate([[99]], PARAMS))
        await asyncio.sleep(0)
        b.start()
        return await asyncio.wait_for(asyncio.gather(good, bad, return_exceptions=True), 30)

    try:
        good, bad = asyncio.run(main())
    finally:
        b.stop()
    assert len(good) == 1 and isinstance(bad, ValueError)
    assert engine.calls == [-2, 1, -1]  # the batch fails, then each request alone
    assert b.stats.engine_calls == 1 and b.stats.requests == 1


def test_seeded_requests_are_never_batched_together():
    engine = _Recorder()
    b = DynamicBatcher(engine, max_batch_size=8, max_wait_ms=200)
    seeded = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=1, seed=5)

    async def main():
        tasks = [asyncio.create_task(b.generate([[i]], seeded)) for i in range(2)]
        await asyncio.sleep(0)
        b.start()
        return await asyncio.wait_for(asyncio.gather(*tasks), 30)

    try:
        asyncio.run(main())
    finally:
        b.stop()
    assert engine.calls == [1, 1] and b.stats.engine_calls == 2 and b.stats.as_dict()["mean_batch"] == 1.0
