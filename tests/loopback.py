"""A real HTTP server on loopback for tests of the project's HTTP clients: each request is recorded, and
the reply to it is ``owner.reply(seen) -> (status, JSON or text)``, or DROP to close the connection."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DROP = object()  # a reply that closes the connection without an answer


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # the JSON body; None for a GET
    at: float  # time.monotonic() on arrival


class Loopback:
    """A real HTTP server whose reply to each request is ``self.reply(seen) -> (status, JSON or text)``."""

    def __init__(self) -> None:
        self.reply: Callable[[Seen], tuple[int, Any]] = lambda seen: (404, {"error": "no route"})
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.done = threading.Event()  # set at teardown: stalled handlers return at once

    def bodies(self) -> list[Any]:
        return [s.body for s in self.seen]


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
def serve() -> Iterator[tuple[str, Loopback]]:
    """(the server's root URL, its state) while the block runs."""
    owner = Loopback()
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.owner = owner  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", owner
    finally:
        owner.done.set()
        httpd.shutdown()
        httpd.server_close()
