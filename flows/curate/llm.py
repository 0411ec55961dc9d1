"""A thin client for OpenAI-compatible endpoints (vLLM, `m1 serve model`, hosted APIs) over httpx."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from flows.errors import InputError


@dataclass
class Endpoint:
    """`base_url` ends before the API path, e.g. http://localhost:8000/v1."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 120.0
    concurrency: int = 8

    def client(self) -> httpx.Client:
        key = self.api_key or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.base_url.rstrip("/"), headers=headers, timeout=self.timeout)

    def chat(self, prompts: list[str], *, n: int = 1, system: str | None = None, **params) -> list[list[str]]:
        """n chat completions per prompt (one request per prompt, `concurrency` at a time)."""
        with self.client() as client:

            def one(prompt: str) -> list[str]:
                messages = ([{"role": "system", "content": system}] if system else []) + [
                    {"role": "user", "content": prompt}
                ]
                body = {"model": self.model, "messages": messages, "n": n, **params}
                data = _post(client, "/chat/completions", body)
                return [
                    c["message"]["content"] or "" for c in sorted(data["choices"], key=lambda c: c["index"])
                ]

            with ThreadPoolExecutor(self.concurrency) as pool:
                return list(pool.map(one, prompts))

    def complete(self, prompts: list[str], *, n: int = 1, **params) -> list[list[str]]:
        """n text completions per prompt, all prompts in one request (the completions API takes a list)."""
        with self.client() as client:
            data = _post(client, "/completions", {"model": self.model, "prompt": prompts, "n": n, **params})
        out: list[list[str]] = [[] for _ in prompts]
        for c in sorted(data["choices"], key=lambda c: c["index"]):
            out[c["index"] // n].append(c["text"])
        return out


def _post(client: httpx.Client, path: str, body: dict) -> dict:
    try:
        resp = client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise InputError(
            f"{client.base_url}{path}: endpoint unreachable ({type(exc).__name__}: {exc})"
        ) from None
    if resp.status_code >= 400:
        raise InputError(f"{client.base_url}{path}: HTTP {resp.status_code}: {resp.text[:200]}")
    return resp.json()
