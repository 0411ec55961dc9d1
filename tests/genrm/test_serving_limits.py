"""The model server's token limits: how a chat request's two limit fields are read (`ChatRequest.
token_budget`, following OpenAI's API). Requests with different limits sharing the engine's steps, each
ending at its own: tests/genrm/test_server_loop.py."""

from __future__ import annotations

import httpx
import pytest

from m1model.serving.protocol import ChatRequest

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("fields", "budget"),
    [
        ({}, None),  # the server's default
        ({"max_tokens": 7}, 7),  # deprecated in OpenAI's API, still read
        ({"max_completion_tokens": 5}, 5),
        ({"max_tokens": 7, "max_completion_tokens": 5}, 5),  # the current field wins...
        ({"max_tokens": 5, "max_completion_tokens": 7}, 7),  # ... larger or smaller
        ({"max_tokens": None, "max_completion_tokens": 3}, 3),
    ],
)
def test_a_chat_requests_limit_is_max_completion_tokens_else_max_tokens(fields, budget):
    assert ChatRequest(messages=MESSAGES, **fields).token_budget == budget


def test_the_served_chat_route_reads_the_same_limit(served):
    """Through the app: a limit past the model's context is a 400 only when it is the one read."""
    url = f"{served}/v1/chat/completions"
    ok = httpx.post(url, json={"messages": MESSAGES, "max_tokens": 10**9, "max_completion_tokens": 3})
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] <= 3
    bad = httpx.post(url, json={"messages": MESSAGES, "max_tokens": 3, "max_completion_tokens": 10**9})
    assert bad.status_code == 400 and "exceeds the model's context" in bad.json()["error"]["message"]
