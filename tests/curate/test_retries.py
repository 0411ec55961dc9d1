"""Prefect retries where a user expects them: a task calling an endpoint that is briefly down is retried
with backoff; a deterministic failure (a 4xx: the request itself is wrong) is not retried."""

from __future__ import annotations

import contextlib
import json

import pytest

from flows.config import PipelineConfig
from tests.fakes.openai import chat_reply, serve

MC = {"question": "Which of these numbers is even? (A) 3 (B) 5 (C) 8", "answer": "(C)"}


@pytest.fixture
def flaky_server():
    """An OpenAI-compatible rewriter that answers `status` for its first `failures` requests."""
    with contextlib.ExitStack() as stack:

        def start(failures: int, status: int):
            root, server = stack.enter_context(serve())
            ok = chat_reply(["What number is even?"])
            server.reply = lambda seen: (
                (status, {"error": "busy"}) if len(server.posted) <= failures else (200, ok)
            )
            return f"{root}/v1", server.posted

        yield start


def config(tmp_path, url: str) -> PipelineConfig:
    data = tmp_path / "mc.jsonl"
    data.write_text(json.dumps(MC) + "\n")
    return PipelineConfig.model_validate(
        {
            "name": "retry",
            "home": str(tmp_path / "home"),
            "curate": {
                "sources": [{"path": str(data)}],
                "clean": {"rewrite": {"url": url, "model": "m", "retries": 1}},  # 2 attempts per task try
            },
        }
    )


@pytest.mark.slow
def test_a_briefly_unavailable_endpoint_is_retried_by_prefect(prefect_harness, tmp_path, flaky_server):
    from flows.curate.flow import curate_flow
    from flows.store import DatasetStore

    url, seen = flaky_server(failures=3, status=503)
    out = curate_flow(config(tmp_path, url))
    assert len(seen) == 4  # try 1: two 503s; Prefect retries the task; try 2: one 503, then the answer
    clean = [state for name, state in out["tasks"] if name == "clean"]
    assert clean == ["Completed"]
    assert DatasetStore(tmp_path / "home").read("retry-curated")["prompt"].to_list() == [
        "What number is even?"
    ]


@pytest.mark.slow
def test_a_deterministic_failure_is_not_retried(prefect_harness, tmp_path, flaky_server):
    from flows.curate.flow import curate_flow
    from verifiers.endpoint import EndpointError

    url, seen = flaky_server(failures=100, status=400)
    with pytest.raises(EndpointError, match="HTTP 400"):
        curate_flow(config(tmp_path, url))
    assert len(seen) == 1  # neither the client nor Prefect asked again
