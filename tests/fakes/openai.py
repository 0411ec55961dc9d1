"""The one fake OpenAI-compatible server of the tests: a real HTTP server on loopback, so the project's
clients are tested over real sockets (connections, retries, timeouts, concurrency).

Each request is recorded (`Seen`). What the server answers is up to the test, at two levels:

- the OpenAI routes, from plain functions: ``chat(body) -> texts`` (the n choices of /chat/completions),
  ``completions(body) -> texts per prompt`` (/completions), ``models`` (the ids of /models);
- or the whole reply, ``reply(seen) -> (status, JSON or text)``, or DROP to close the connection without an
  answer (transport failures, malformed replies).

`serve(...)` runs one for the duration of a block; the `openai_server` fixture starts them for a test.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DROP = object()  # a reply that closes the connection without an answer

Chat = Callable[[dict], list[str]]  # a request body -> the texts of its n choices
Completions = Callable[[dict], list[list[str]]]  # a request body -> n texts per prompt


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # the JSON body; None for a GET
    at: float  # time.monotonic() on arrival


def chat_reply(contents: list[Any]) -> dict:
    """A chat completion whose choices hold these contents, in order."""
    return {
        "object": "chat.completion",
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop"}
            for i, c in enumerate(contents)
        ],
    }


def completion_reply(per_prompt: list[list[str]], n: int) -> dict:
    """A text completion with n choices per prompt, indexed prompt-major as the API does."""
    choices = [
        {"index": p * n + j, "text": t} for p, texts in enumerate(per_prompt) for j, t in enumerate(texts)
    ]
    return {"object": "text_completion", "choices": choices}


class Loopback:
    """The server's state: what it saw, and how it answers (`reply`, by default the OpenAI routes)."""

    def __init__(
        self,
        chat: Chat | None = None,
        completions: Completions | None = None,
        models: list[str] | None = None,
    ) -> None:
        self.chat, self.completions, self.models = chat, completions, models
        self.reply: Callable[[Seen], tuple[int, Any]] = self.routes
        self.seen: list[Seen] = []
        self.posted: list[Any] = []  # the bodies of the POSTs, in order of arrival
        self.lock = threading.Lock()
        self.done = threading.Event()  # set at teardown: stalled handlers return at once

    def bodies(self) -> list[Any]:
        return [s.body for s in self.seen]

    def routes(self, seen: Seen) -> tuple[int, Any]:
        """The OpenAI API under /v1 from `chat`, `completions` and `models`; 404 for anything else."""
        if seen.method == "POST" and seen.path == "/v1/chat/completions" and self.chat:
            return 200, chat_reply(self.chat(seen.body))
        if seen.method == "POST" and seen.path == "/v1/completions" and self.completions:
            return 200, completion_reply(self.completions(seen.body), int(seen.body.get("n", 1)))
        if seen.method == "GET" and seen.path == "/v1/models" and self.models is not None:
            return 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
        return 404, {"error": "no route"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def _answer(self, method: str) -> None:
        owner: Loopback = self.server.owner  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        seen = Seen(method, self.path, headers, json.loads(raw) if raw else None, time.monotonic())
        with owner.lock:
            owner.seen.append(seen)
            if method == "POST":
                owner.posted.append(seen.body)
        status, payload = owner.reply(seen)
        if payload is DROP:
            self.close_connection = True
            return
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if isinstance(payload, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler still waiting never holds up the shutdown
    request_queue_size = 64  # many concurrent clients connect at once


@contextmanager
def serve(
    chat: Chat | None = None, completions: Completions | None = None, models: list[str] | None = None
) -> Iterator[tuple[str, Loopback]]:
    """(the server's root URL, its state) while the block runs; its API is under ``/v1``."""
    owner = Loopback(chat, completions, models)
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.owner = owner  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", owner
    finally:
        owner.done.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def openai_loopback() -> Iterator[tuple[str, Loopback]]:
    """One server for a whole test module: (its root URL, its state); the module's own fixture sets
    ``reply`` or resets the state for each test."""
    with serve() as running:
        yield running


@pytest.fixture
def openai_server():
    """Start servers for the test: ``start(chat, completions=None) -> (base URL ending in /v1, the bodies
    the server was sent, growing as requests arrive)``."""
    with contextlib.ExitStack() as stack:

        def start(chat: Chat, completions: Completions | None = None) -> tuple[str, list[Any]]:
            root, owner = stack.enter_context(serve(chat, completions))
            return f"{root}/v1", owner.posted

        yield start
