"""API keys for the HTTP services other machines reach (`m1 serve rewards`, `m1 serve model`).

As vLLM's server does it: with a key, every request must carry ``Authorization: Bearer <key>`` or gets
401; ``/health`` stays open for load balancers and probes. Binding a non-loopback address without a
key is refused unless the user says ``--insecure``: a reward service on 0.0.0.0 runs whatever code it is
asked to score, and a model server gives away GPU time.

    app = create_app(...)
    protect(app, check_exposure(host, api_key, insecure))   # then uvicorn.run(app, host=host, ...)

Clients send the same key: `verifiers.endpoint.Endpoint` reads ``$OPENAI_API_KEY``.

Not a flow: the guard the `m1 serve` commands put in front of the services they start.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import socket
import sys
from collections.abc import Iterable

from flows.errors import InputError

OPEN_PATHS = ("/health",)


class BearerAuth:
    """ASGI middleware: 401 for an HTTP request without the right bearer token, except ``open_paths``.

    Pure ASGI rather than Starlette's BaseHTTPMiddleware, so streamed responses (a model server's
    server-sent events) pass through untouched. Keys are compared in constant time.
    """

    def __init__(self, app, api_key: str, open_paths: Iterable[str] = OPEN_PATHS) -> None:
        if not api_key:
            raise ValueError("BearerAuth needs a non-empty API key")
        self.app = app
        self.key = api_key.encode()
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = given.partition(b" ")
        if scheme.lower() == b"bearer" and secrets.compare_digest(token.strip(), self.key):
            await self.app(scope, receive, send)
            return
        why = "wrong API key" if given else "missing API key"
        body = json.dumps({"detail": f"{why}: send the header 'Authorization: Bearer <key>'"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def protect(app, api_key: str | None, open_paths: Iterable[str] = OPEN_PATHS):
    """Require ``api_key`` on every route of a FastAPI/Starlette app but ``open_paths``; no key: as is."""
    if api_key:
        app.add_middleware(BearerAuth, api_key=api_key, open_paths=tuple(open_paths))
    return app


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (127.0.0.0/8, ::1)."""
    if host in ("", "0.0.0.0", "::"):
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:  # a name: loopback only if all it resolves to is
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def check_exposure(host: str, api_key: str | None, insecure: bool, *, command: str) -> str | None:
    """The key to require (None: none), or an InputError for a non-loopback bind without a key."""
    api_key = api_key or None  # an empty M1_API_KEY means no key
    if api_key is not None or is_loopback(host):
        return api_key
    if not insecure:
        raise InputError(
            f"{command}: refusing to serve {host} without an API key: other machines could use it. "
            "Give --api-key KEY (or set M1_API_KEY; clients send it as OPENAI_API_KEY), "
            "or --insecure on a network you trust"
        )
    print(f"{command}: serving {host} without an API key (--insecure)", file=sys.stderr)
    return None
