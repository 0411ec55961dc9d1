"""The model server's token limits: how a chat request's two limit fields are read (`ChatRequest.
token_budget`, following OpenAI's API), and the batcher running requests with different ``max_tokens``
in one engine call while each gets exactly its own limit (m1model/serving/batcher.py)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from m1model.engine import Completion, SamplingParams
from m1model.serving.batcher import DynamicBatcher
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


# -- batching requests with different limits --------------------------------------------------------------


class RecordingEngine:
    """Generates ``max_tokens`` tokens for every prompt (``[0]``: stops after 2; ``[9]``: its last token is
    a stop token), recording each call."""

    model = None

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []  # (sequences, max_tokens)

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        self.calls.append((len(prompts), params.max_tokens))
        out = []
        for p in prompts:
            if p == [0]:
                out.append(Completion([7, 2], [-0.1, -0.2], "stop"))
            else:
                n = params.max_tokens
                reason = "stop" if p == [9] else "length"
                out.append(Completion(list(range(10, 10 + n)), [-1.0 * i for i in range(n)], reason))
        return out


def batched(requests: list[tuple[list[list[int]], SamplingParams]]):
    engine = RecordingEngine()
    batcher = DynamicBatcher(engine, max_batch_size=64, max_wait_ms=200)
    batcher.start()

    async def all_at_once():
        return await asyncio.gather(*(batcher.generate(prompts, params) for prompts, params in requests))

    try:
        return asyncio.run(all_at_once()), engine.calls
    finally:
        batcher.stop()


def test_requests_with_different_limits_share_one_call_and_each_gets_its_own():
    (short, long_, middle), calls = batched(
        [
            ([[1], [2]], SamplingParams(max_tokens=3)),
            ([[3]], SamplingParams(max_tokens=8)),
            ([[4]], SamplingParams(max_tokens=5)),
        ]
    )
    assert calls == [(4, 8)]  # one engine call, run to the largest limit
    assert [len(g.completion.token_ids) for g in short] == [3, 3]
    assert [g.completion.finish_reason for g in short] == ["length", "length"]
    assert short[0].completion.token_ids == [10, 11, 12] and short[0].completion.logprobs == [0.0, -1.0, -2.0]
    assert len(long_[0].completion.token_ids) == 8 and long_[0].completion.finish_reason == "length"
    assert len(middle[0].completion.token_ids) == 5 and len(middle[0].completion.logprobs) == 5


def test_a_completion_that_stopped_within_its_limit_is_left_as_it_is():
    (stopped, other), calls = batched(
        [([[0]], SamplingParams(max_tokens=2)), ([[5]], SamplingParams(max_tokens=6))]
    )
    assert calls == [(2, 6)]
    assert stopped[0].completion == Completion([7, 2], [-0.1, -0.2], "stop")  # exactly at its limit: a stop
    assert len(other[0].completion.token_ids) == 6


def test_different_temperatures_are_separate_calls_each_with_its_own_limit():
    (cold, hot), calls = batched(
        [([[1]], SamplingParams(temperature=0.0, max_tokens=2)), ([[2]], SamplingParams(max_tokens=4))]
    )
    assert sorted(calls) == [(1, 2), (1, 4)]
    assert len(cold[0].completion.token_ids) == 2 and len(hot[0].completion.token_ids) == 4


def test_a_completion_cut_to_its_limit_ends_by_length_even_if_the_longer_run_stopped():
    (cut, whole), _ = batched([([[9]], SamplingParams(max_tokens=3)), ([[9]], SamplingParams(max_tokens=6))])
    assert (len(cut[0].completion.token_ids), cut[0].completion.finish_reason) == (3, "length")
    assert (len(whole[0].completion.token_ids), whole[0].completion.finish_reason) == (6, "stop")
