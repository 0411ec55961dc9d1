"""The model server's request handling and batching, unit by unit: chat roles and the template, prompt
checks, finish reasons, how generation errors become API errors, token bytes, and the error body (the engine loop: test_server_loop.py)."""

from __future__ import annotations

import asyncio

import pytest

from m1model.engine import Completion
from m1model.serving import ServerSettings, app_from_checkpoint
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
    done = service.finish(Completion([5, 6], [-0.1, -0.2], engine), stops=[])
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
    done = service.finish(Completion(ids, [-0.1] * len(ids), "length"), stops=["fox"])
    shortest = next(
        k for k in range(1, len(ids) + 1) if "fox" in tok.decode(ids[:k], skip_special_tokens=True)
    )
    assert done.token_ids == ids[:shortest] and len(done.logprobs) == shortest
    assert done.finish_reason == "stop" and "fox" not in done.text and done.text.startswith("the quick")


def test_streamed_text_holds_back_half_characters_and_possible_stop_strings(service):
    from m1model.serving.app import _TextStream
    from m1model.serving.batcher import Delta

    tok = service.tokenizer
    ids = tok.encode("fox é fin", add_special_tokens=False)
    stream, sent = _TextStream(), []
    for i, t in enumerate(ids):
        last = i == len(ids) - 1
        text, tokens = stream.add(service, Delta(0, [t], [-0.1], None, "length" if last else None), ["fi"])
        sent.append(text)
        assert "\ufffd" not in text and "fi" not in text
        assert tokens.token_ids == ([] if last else [t])  # the last token is past the cut: not sent
    assert "".join(sent) == "fox é "  # cut at the stop string, which was never sent
    assert any(s == "" for s in sent[:-1])  # something was held back on the way (a half é, or the "f")
