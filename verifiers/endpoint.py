"""The one client for OpenAI-compatible endpoints: vLLM, `m1 serve model`, hosted APIs.

Everything in the project that talks to a model over HTTP goes through `Endpoint`: multiple-choice
rewrites and pass-rate sampling in curation, logic calibration, test-suite generation, generative
judges, SWE problem statements. Its settings are one pydantic model, `EndpointSettings`, which the
config's endpoint sections and the judges' options extend. It lives in `verifiers/` so that verifiers
(judges, test generation) can use it without importing `flows`.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retried with exponential
backoff; a deterministic failure (any other 4xx, a reply that is not a completion) is not. When the
retries are spent, `EndpointError` says which URL failed and why, for the whole batch.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class EndpointError(RuntimeError):
    """The endpoint could not be used: unreachable after retries, an HTTP error, or an unusable reply."""


class EndpointUnavailable(EndpointError):
    """Transient failures outlasted the retries (down, overloaded, timing out): worth retrying later,
    unlike a 4xx or a malformed reply, which would fail the same way again."""


def choice_text(choice: dict[str, Any]) -> str:
    """The text of one choice of either API: a chat message's content or a completion's text."""
    if "message" in choice:
        return (choice.get("message") or {}).get("content") or ""
    return choice.get("text") or ""


class EndpointSettings(BaseModel):
    """Where and how to reach an OpenAI-compatible endpoint (vLLM, `m1 serve model`, a hosted API): the one
    settings model that the config's endpoint sections (flows.config.EndpointConfig), the judges' options
    (verifiers.genrm.options.JudgeOptions) and the client (`Endpoint`) share. The API key is read from
    ``$OPENAI_API_KEY`` rather than stored here, so it never shows in the UI's parameter form."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, description="base URL ending in /v1; unset: no endpoint")
    model: str = Field("default", description="model name sent with each request")
    api: Literal["chat", "completions"] = "chat"
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(3, ge=0, description="retries on connection errors, 429 and 5xx (with backoff)")
    concurrency: int = Field(8, ge=1, description="parallel requests")

    def client(self) -> Endpoint:
        """The project's one client for these settings."""
        if not self.url:
            raise ValueError("no endpoint configured (url is unset)")
        return Endpoint(**self.model_dump(include=set(EndpointSettings.model_fields)))


class Endpoint(EndpointSettings):
    """The client: `EndpointSettings` with a ``url`` (ending before the API path, e.g.
    ``http://127.0.0.1:8000/v1``), plus the transport's own ``api_key`` (default ``$OPENAI_API_KEY``:
    vLLM and `m1 serve model` read the same bearer token; never serialised) and ``backoff_s``."""

    url: str
    api_key: str | None = Field(None, exclude=True, repr=False)
    backoff_s: float = 0.5

    def client(self) -> Endpoint:
        return self

    def http(self) -> httpx.Client:
        key = self.api_key or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url.rstrip("/"), headers=headers, timeout=self.timeout_s)

    # -- the two APIs ------------------------------------------------------------------------------------

    def chat(
        self,
        prompts: Sequence[str | list[dict[str, str]]],
        *,
        n: int = 1,
        system: str | None = None,
        **params: Any,
    ) -> list[list[str]]:
        """n chat completions per prompt (a string, or a message list), one request per prompt,
        ``concurrency`` at a time. Asks again for the missing ones when a server returns fewer than n."""
        choices = self.chat_choices(prompts, n=n, system=system, **params)
        return [[choice_text(c) for c in cs] for cs in choices]

    def chat_choices(
        self,
        prompts: Sequence[str | list[dict[str, str]]],
        *,
        n: int = 1,
        system: str | None = None,
        **params: Any,
    ) -> list[list[dict[str, Any]]]:
        """`chat`'s n choices per prompt as the server sent them (with their ``logprobs`` when asked)."""

        def messages(prompt: str | list[dict[str, str]]) -> list[dict[str, str]]:
            head = [{"role": "system", "content": system}] if system else []
            return head + (prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}])

        with self.http() as client:

            def one(prompt: str | list[dict[str, str]]) -> list[dict[str, Any]]:
                out: list[dict[str, Any]] = []
                while len(out) < n:
                    body = {"model": self.model, "messages": messages(prompt), "n": n - len(out), **params}
                    choices = self.post(client, "/chat/completions", body).get("choices") or []
                    if not choices:
                        raise EndpointError(f"{self.url}/chat/completions: reply without choices")
                    try:
                        ordered = sorted(choices, key=lambda c: c.get("index", 0))
                        if not all(isinstance(c.get("message") or {}, dict) for c in ordered):
                            raise TypeError
                    except (AttributeError, TypeError):
                        raise EndpointError(
                            f"{self.url}/chat/completions: reply is not a chat completion"
                        ) from None
                    out += ordered
                return out[:n]

            return self._map(one, prompts)

    def complete(self, prompts: Sequence[str], *, n: int = 1, **params: Any) -> list[list[str]]:
        """n text completions per prompt, in requests of up to 16 prompts (the API takes a list)."""
        return [[choice_text(c) for c in cs] for cs in self.complete_choices(prompts, n=n, **params)]

    def complete_choices(self, prompts: Sequence[str], *, n: int = 1, **params: Any) -> list[list[dict]]:
        """`complete`'s n choices per prompt as the server sent them (with their ``logprobs`` when asked)."""
        batches = [list(prompts[i : i + 16]) for i in range(0, len(prompts), 16)]
        with self.http() as client:

            def one(batch: list[str]) -> list[list[dict]]:
                data = self.post(
                    client, "/completions", {"model": self.model, "prompt": batch, "n": n, **params}
                )
                out: list[list[dict]] = [[] for _ in batch]
                try:
                    for c in sorted(data["choices"], key=lambda c: c["index"]):
                        if not isinstance(c["text"], str):
                            raise TypeError
                        out[c["index"] // n].append(c)
                except (KeyError, IndexError, TypeError):
                    raise EndpointError(f"{self.url}/completions: reply is not a completion") from None
                if any(len(texts) != n for texts in out):  # callers rely on n samples per prompt
                    raise EndpointError(f"{self.url}/completions: reply without {n} choices per prompt")
                return out

            return [texts for batch in self._map(one, batches) for texts in batch]

    def models(self) -> list[str]:
        with self.http() as client:
            data = self.post(client, "/models", None)
        return [m.get("id", "") for m in data.get("data", [])]

    # -- transport -------------------------------------------------------------------------------------

    def _map(self, fn, items: Sequence) -> list:
        if len(items) <= 1 or self.concurrency <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(min(self.concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    def post(self, client: httpx.Client, path: str, body: dict | None) -> dict:
        """POST (GET when ``body`` is None) with retries on transient failures; the reply's JSON."""
        url = f"{self.url.rstrip('/')}{path}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                # full jitter: concurrent clients that failed together do not retry together
                time.sleep(random.uniform(0, self.backoff_s * 2 ** (attempt - 1)))
            try:
                resp = client.get(path) if body is None else client.post(path, json=body)
            except httpx.HTTPError as exc:
                last = f"unreachable ({type(exc).__name__}: {exc})"
                continue
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                continue
            if resp.status_code >= 400:
                raise EndpointError(f"{url}: HTTP {resp.status_code}: {resp.text[:200]}")
            try:
                data = resp.json()
            except ValueError:
                raise EndpointError(f"{url}: reply is not JSON: {resp.text[:200]!r}") from None
            if not isinstance(data, dict):
                raise EndpointError(f"{url}: reply is not a JSON object")
            return data
        raise EndpointUnavailable(f"{url}: {last} (after {self.retries + 1} attempts)")
