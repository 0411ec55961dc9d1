"""The reward service: every verifier plugin over HTTP (FastAPI), scored in a process pool.

    POST /score      {"verifier": "math", "items": [{...}, ...], "options": {...}, "timeout_s": 10}
                     -> {"verifier": ..., "version": ..., "rewards": [{"reward": 1.0, "details": {...}}]}
    GET  /verifiers  the plugins, with versions, sources and load errors
    GET  /health     liveness plus pool size
    GET  /metrics    Prometheus text format

Client mistakes get a 4xx with a one-line ``detail``: malformed JSON (400), a payload over the size or
item limit (413), an unknown verifier or bad options (422). A bad *item* is not a client error of the
request: it gets reward 0 and an ``error`` detail like everywhere else, and the other items are scored.
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from cachetools import LRUCache
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifiers.base import Registry, default_registry
from verifiers.pool import ScoringPool, options_key


class ServiceSettings(BaseModel):
    workers: int = Field(2, ge=1, description="scoring processes")
    item_timeout_s: float = Field(30.0, gt=0, description="default and maximum seconds per item")
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024, description="largest accepted request body")
    max_items: int = Field(4096, ge=1, description="most items in one /score request")
    plugin_dirs: list[str] = Field(default_factory=list)


class ScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verifier: str = Field(min_length=1)
    items: list[Any]  # objects; anything else becomes that item's error, not the request's
    options: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float | None = Field(None, gt=0, description="per-item timeout, at most the server's")


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "m1_reward_requests",
            "HTTP requests to /score by outcome",
            ["verifier", "status"],
            registry=self.registry,
        )
        self.items = Counter(
            "m1_reward_items",
            "Items scored by outcome (ok, error, timeout)",
            ["verifier", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "m1_reward_request_seconds",
            "Wall time of /score requests",
            ["verifier"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.inflight = Gauge(
            "m1_reward_items_in_flight", "Items queued or being scored", registry=self.registry
        )


def _reject(status: int, detail: str, metrics: _Metrics, verifier: str = "-") -> HTTPException:
    metrics.requests.labels(verifier, str(status)).inc()
    return HTTPException(status, detail)


async def _read_body(request: Request, limit: int, metrics: _Metrics) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed `limit` (before reading it all)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _reject(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes", metrics)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _reject(413, f"request body exceeds the limit of {limit} bytes", metrics)
    return bytes(body)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "body"
    return f"{where}: {err['msg']}"


def create_app(settings: ServiceSettings | None = None, registry: Registry | None = None) -> FastAPI:
    settings = settings or ServiceSettings()
    registry = registry or default_registry(settings.plugin_dirs)
    metrics = _Metrics()
    # (verifier, options) -> version, once validated; bounded, as clients choose the options
    checked_options: LRUCache[tuple[str, str], str] = LRUCache(1024)
    started = time.monotonic()
    state: dict[str, ScoringPool] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        pool = ScoringPool(settings.workers, settings.plugin_dirs)
        await pool.warm()
        state["pool"] = pool
        try:
            yield
        finally:
            state.pop("pool").close()

    app = FastAPI(title="m1 reward service", lifespan=lifespan)

    def validate_verifier(name: str, options: dict[str, Any]) -> str:
        """Instantiate once per (verifier, options) here, so unknown names and bad options are a 422
        for the request rather than the same error repeated on every item."""
        key = (name, options_key(options))
        if key not in checked_options:
            try:
                verifier = registry.get(name, **options)
            except KeyError as exc:  # label "-": client-chosen names must not grow the metric series
                raise _reject(422, str(exc.args[0]), metrics) from None
            except (TypeError, ValueError) as exc:
                raise _reject(422, f"options for verifier {name!r}: {exc}", metrics, name) from None
            except Exception as exc:  # noqa: BLE001 - a plugin's constructor bug: refuse, do not crash
                raise _reject(
                    422, f"verifier {name!r} cannot be created: {type(exc).__name__}: {exc}", metrics, name
                ) from None
            close = getattr(verifier, "close", None)
            if callable(close):
                close()
            checked_options[key] = getattr(verifier, "version", "?")
        return checked_options[key]

    @app.post("/score")
    async def score(request: Request) -> Response:
        t0 = time.perf_counter()
        raw = await _read_body(request, settings.max_body_bytes, metrics)
        try:
            payload = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _reject(400, f"malformed JSON: {exc}", metrics) from None
        try:
            req = ScoreRequest.model_validate(payload)
        except ValidationError as exc:
            raise _reject(422, f"invalid request: {_first_error(exc)}", metrics) from None
        if len(req.items) > settings.max_items:
            raise _reject(
                413, f"{len(req.items)} items exceed the limit of {settings.max_items} per request", metrics
            )
        if len(state) == 0:
            raise _reject(503, "service is starting or stopping", metrics, req.verifier)
        version = validate_verifier(req.verifier, req.options)
        timeout = min(req.timeout_s or settings.item_timeout_s, settings.item_timeout_s)

        metrics.inflight.inc(len(req.items))
        try:
            rewards = await state["pool"].score(req.verifier, req.options, req.items, timeout)
        finally:
            metrics.inflight.dec(len(req.items))
        outcomes = collections.Counter(
            "timeout" if r.details.get("timeout") else "error" if "error" in r.details else "ok"
            for r in rewards
        )
        for outcome, count in outcomes.items():  # one labelled increment per outcome, not per item
            metrics.items.labels(req.verifier, outcome).inc(count)
        metrics.requests.labels(req.verifier, "200").inc()
        metrics.latency.labels(req.verifier).observe(time.perf_counter() - t0)
        body = {
            "verifier": req.verifier,
            "version": version,
            "rewards": [{"reward": r.reward, "details": r.details} for r in rewards],
        }
        # default=str: a plugin's details may hold values JSON cannot spell; they must not cost a 500
        return Response(json.dumps(body, default=str), media_type="application/json")

    @app.get("/verifiers")
    def verifiers() -> list[dict[str, Any]]:
        return [
            {
                "name": p.name,
                "version": p.version,
                "source": p.source,
                "target": p.target,
                "load_error": p.load_error,
            }
            for p in registry.plugins()
        ]

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {
            "status": "ok" if state else "starting",
            "workers": settings.workers,
            "verifiers": registry.names(),
            "uptime_s": round(time.monotonic() - started, 1),
        }

    @app.get("/metrics")
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
