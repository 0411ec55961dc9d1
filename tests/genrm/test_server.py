"""`m1 serve model`'s app: the official openai client against it, unchanged; batching; 4xx on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=f"{served}/v1", api_key="unused", max_retries=0)


def test_models_and_health(client, served):
    (card,) = client.models.list().data
    assert card.id == "tiny" and card.owned_by == "m1-pipeline"
    assert httpx.get(f"{served}/health").json()["status"] == "ok"


def test_completions_n_logprobs_and_usage(client):
    r = client.completions.create(
        model="tiny", prompt=["the quick", "lazy dog"], max_tokens=6, n=3, logprobs=2
    )
    assert len(r.choices) == 6 and sorted(c.index for c in r.choices) == list(range(6))
    for c in r.choices:
        lp = c.logprobs
        assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) <= 6
        assert all(v <= 0 for v in lp.token_logprobs)
        assert all(1 <= len(top) <= 2 for top in lp.top_logprobs)
        # tokens holding part of a UTF-8 character come as `bytes:\\xNN`: together they rebuild the text
        raw = b"".join(
            bytes.fromhex(t[6:].replace("\\x", "")) if t.startswith("bytes:") else t.encode()
            for t in lp.tokens
        )
        assert raw.decode("utf-8", errors="replace") == c.text or c.finish_reason == "stop"
    assert r.usage.completion_tokens == sum(len(c.logprobs.tokens) for c in r.choices)


def test_seed_is_reproducible_and_stop_cuts_the_text(client):
    ask = dict(model="tiny", prompt="the quick brown", max_tokens=24, temperature=1.0, seed=7)
    first = client.completions.create(**ask).choices[0]
    again = client.completions.create(**ask).choices[0]
    assert first.text == again.text and len(first.text) >= 6
    stop = first.text[3:5]
    cut = client.completions.create(**ask, stop=[stop]).choices[0]
    assert cut.text == first.text[: first.text.find(stop)]
    assert cut.finish_reason == "stop"


def test_chat_uses_the_chat_template_and_top_logprobs(client, tiny_checkpoint):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_checkpoint))  # the template lives in the files
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi fox"}], add_generation_prompt=True, tokenize=False
    )
    assert text.startswith("<|bos|><|user|>\nhi fox\n") and text.endswith("<|assistant|>\n")

    r = client.chat.completions.create(
        model="tiny",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi fox"}],
        max_tokens=5,
        logprobs=True,
        top_logprobs=3,
        n=2,
    )
    assert len(r.choices) == 2 and r.choices[0].message.role == "assistant"
    content = r.choices[0].logprobs.content
    assert 1 <= len(content) <= 5 and all(len(t.top_logprobs) >= 1 for t in content)
    # the sampled token can never be more likely than the most likely one
    assert all(t.logprob <= t.top_logprobs[0].logprob + 1e-4 for t in content)


def test_streaming_sends_tokens_as_they_come_and_the_same_text_as_without(client):
    ask = dict(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=12, seed=1)
    whole = client.chat.completions.create(**ask).choices[0]
    chunks = list(client.chat.completions.create(**ask, stream=True))
    assert len(chunks) > 2 and chunks[-1].choices[0].finish_reason == whole.finish_reason
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole.message.content


def test_a_streamed_stop_string_is_never_sent_and_ends_the_choice(client):
    ask = dict(model="tiny", prompt="the quick brown", max_tokens=24, temperature=1.0, seed=7)
    free = client.completions.create(**ask).choices[0].text
    stop = free[5:7]
    chunks = list(client.completions.create(**ask, stop=[stop], stream=True))
    text = "".join(c.choices[0].text for c in chunks)
    assert text == free[: free.find(stop)] and chunks[-1].choices[0].finish_reason == "stop"


def test_concurrent_requests_share_engine_steps(client, served):
    before = httpx.get(f"{served}/health").json()["batching"]
    with ThreadPoolExecutor(16) as pool:
        done = list(
            pool.map(
                lambda i: client.completions.create(model="tiny", prompt=f"fox {i}", max_tokens=4 + i % 3),
                range(16),
            )
        )
    assert all(len(r.choices) == 1 for r in done)
    after = httpx.get(f"{served}/health").json()["batching"]
    requests = after["requests"] - before["requests"]
    steps = after["steps"] - before["steps"]
    tokens = sum(r.usage.completion_tokens for r in done)
    assert requests == 16 and steps < tokens, (requests, steps, tokens)


def test_metrics_are_prometheus_text_with_the_engines_queues(served):
    from prometheus_client.parser import text_string_to_metric_families

    r = httpx.get(f"{served}/metrics")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    for name in ("m1_engine_requests_running", "m1_engine_requests_waiting", "m1_engine_requests_preempted"):
        assert families[name].type == "gauge" and families[name].samples[0].value == 0
    assert families["m1_engine_kv_blocks_total"].samples[0].value > 0
    assert families["m1_engine_preemptions"].type == "counter"
    assert families["m1_engine_time_to_first_token_seconds"].type == "summary"


BAD = [
    (b"{not json", 400),
    (b"[1, 2]", 400),
    (json.dumps({"prompt": "x", "temperature": -1}).encode(), 400),
    (json.dumps({"prompt": "x", "top_p": 0}).encode(), 400),
    (json.dumps({"prompt": "x", "n": 0}).encode(), 400),
    (json.dumps({"prompt": "x", "max_tokens": 0}).encode(), 400),
    (json.dumps({"prompt": "x", "max_tokens": 10**9}).encode(), 400),
    (json.dumps({"prompt": [], "max_tokens": 2}).encode(), 400),
    (json.dumps({"prompt": [[]], "max_tokens": 2}).encode(), 400),
    (json.dumps({"prompt": [10**7], "max_tokens": 2}).encode(), 400),
    (json.dumps({"prompt": "x", "presence_penalty": 1}).encode(), 400),
    (json.dumps({"prompt": "x", "logprobs": 99}).encode(), 400),
    (json.dumps({"prompt": "x", "model": "someone-else"}).encode(), 404),
    (json.dumps({"max_tokens": 2}).encode(), 400),
]


@pytest.mark.parametrize("body,status", BAD)
def test_bad_completion_requests_get_a_json_4xx(served, body, status):
    r = httpx.post(f"{served}/v1/completions", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert r.json()["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"messages": []},
        {"messages": [{"role": "wizard", "content": "x"}]},
        {"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2},
        {"messages": "hello"},
    ],
)
def test_bad_chat_requests_get_a_json_400(served, body):
    r = httpx.post(f"{served}/v1/chat/completions", json=body)
    assert r.status_code == 400 and "error" in r.json()
    assert httpx.get(f"{served}/health").status_code == 200  # and the server is still up


def test_unknown_route_is_a_json_404(served):
    r = httpx.get(f"{served}/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["message"]


def test_cli_rejects_a_folder_that_is_not_a_checkpoint(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flows.cli import main; main()",
            "serve",
            "model",
            "--checkpoint",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "not a model folder" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_the_projects_own_sampler_samples_from_it(served, api):
    """What pass-rate filtering and logic calibration do with `policy.endpoint.url = <m1 serve model>`."""
    from flows.config import EndpointConfig, PolicyConfig
    from flows.policy import make_sampler

    policy = PolicyConfig(endpoint=EndpointConfig(url=f"{served}/v1", model="tiny", api=api), max_tokens=5)
    out = make_sampler(policy).sample(["the quick", "lazy"], k=3)
    assert [len(x) for x in out] == [3, 3] and all(isinstance(t, str) for x in out for t in x)
