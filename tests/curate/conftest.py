"""A real OpenAI-compatible HTTP server on localhost, with a rule-based 'model' supplied by each test."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest


@pytest.fixture
def serve_app():
    """Serve FastAPI apps on loopback ports for the test's lifetime: serve(app) -> base URL ending in /v1."""
    import uvicorn

    servers = []

    def serve(app) -> str:
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            threading.Event().wait(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/v1"

    yield serve
    for server, thread in servers:
        server.should_exit = True
        thread.join(5)


@pytest.fixture
def openai_server(serve_app):
    """Start servers from handlers: chat(body) -> list of reply texts (n of them); returns the base URL."""
    from fastapi import FastAPI

    def start(
        chat: Callable[[dict], list[str]], completions: Callable[[dict], list[list[str]]] | None = None
    ):
        app = FastAPI()
        seen: list[dict] = []

        @app.post("/v1/chat/completions")
        def chat_route(body: dict):
            seen.append(body)
            return {
                "choices": [
                    {"index": i, "message": {"role": "assistant", "content": t}}
                    for i, t in enumerate(chat(body))
                ]
            }

        @app.post("/v1/completions")
        def completions_route(body: dict):
            seen.append(body)
            per_prompt = completions(body)
            n = body.get("n", 1)
            return {
                "choices": [
                    {"index": p * n + j, "text": t}
                    for p, texts in enumerate(per_prompt)
                    for j, t in enumerate(texts)
                ]
            }

        return serve_app(app), seen

    return start
