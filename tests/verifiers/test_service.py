"""The reward service through a real uvicorn server on a loopback port (started as `m1 serve rewards`)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytestmark = pytest.mark.slow  # one real server for the module: ~10 s to start and warm

MATH_OK = {"response": "so \\boxed{\\frac{1}{2}}", "reference": "0.5"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PLUGIN = """
import os

from verifiers.base import Reward

class Echo:
    name, version = "echo", "0.3"

    def verify(self, items):
        if any(item.get("explode") for item in items):
            raise RuntimeError("plugin bug")
        if any(item.get("die") for item in items):
            os._exit(3)  # a crash that takes the worker process down
        return [Reward(float(len(item["response"])), {"pid_free": True}) for item in items]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    plugins = tmp_path_factory.mktemp("plugins")
    (plugins / "echo.py").write_text(PLUGIN, encoding="utf-8")
    port = _free_port()
    limits = f"--port {port} --workers 2 --item-timeout 20 --max-body-mb 0.05 --max-items 64".split()
    cmd = [sys.executable, "-c", "from flows.cli import main; main()", "serve", "rewards", *limits]
    cmd += ["--log-level", "warning", "--plugin-dir", str(plugins)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).json()["status"] == "ok":
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"reward service did not start: {proc.stdout.read().decode()[-2000:]}")
        time.sleep(0.2)
    with httpx.Client(base_url=base, timeout=60) as client:
        yield client
    proc.terminate()
    proc.wait(timeout=20)


def test_scores_a_mixed_batch(server):
    items = [MATH_OK, {"response": "the answer is 4", "reference": "4"}, "not an object", {"reference": "1"}]
    r = server.post("/score", json={"verifier": "math", "items": items, "options": {"format_weight": 0.5}})
    assert r.status_code == 200
    body = r.json()
    assert body["verifier"] == "math" and body["version"]
    rewards = body["rewards"]
    assert [x["reward"] for x in rewards] == [1.0, 0.5, 0.0, 0.0]  # the second is correct but not boxed
    assert (
        "not a JSON object" in rewards[2]["details"]["error"] and "response" in rewards[3]["details"]["error"]
    )

    r = server.post(
        "/score",
        json={
            "verifier": "constraints",
            "items": [
                {
                    "response": "short answer",
                    "constraints": [{"type": "word_count", "max": 5}, {"type": "no_commas"}],
                },
            ],
        },
    )
    assert r.status_code == 200 and r.json()["rewards"][0]["reward"] == 1.0


def test_directory_plugin_is_served_and_its_bugs_contained(server):
    items = [{"response": "abc"}, {"response": "x", "explode": True}, {"response": "abcdef"}]
    r = server.post("/score", json={"verifier": "echo", "items": items})
    assert r.status_code == 200 and r.json()["version"] == "0.3"
    rewards = r.json()["rewards"]
    assert rewards[0]["reward"] == 3.0 and rewards[2]["reward"] == 6.0
    assert rewards[1]["details"]["error"] == "RuntimeError: plugin bug"

    # a worker killed mid-chunk: its chunk-mates are rescored one by one, the culprit gets the error
    items = [{"response": "ab"}, {"response": "x", "die": True}, {"response": "abcd"}]
    rewards = server.post("/score", json={"verifier": "echo", "items": items}).json()["rewards"]
    assert rewards[0]["reward"] == 2.0 and rewards[2]["reward"] == 4.0
    assert "worker process died (exit code 3)" in rewards[1]["details"]["error"]


@pytest.mark.parametrize(
    ("content", "status", "message"),
    [
        (b'{"verifier": "math", "items": [', 400, "malformed JSON"),
        (b"\xff\xfe not utf-8", 400, "malformed JSON"),
        (json.dumps({"verifier": "nope", "items": []}).encode(), 422, "unknown verifier 'nope'"),
        (json.dumps({"verifier": "math", "items": [], "options": {"bogus": 1}}).encode(), 422, "bogus"),
        (json.dumps({"verifier": "math", "items": {"a": 1}}).encode(), 422, "items"),
        (json.dumps({"items": []}).encode(), 422, "verifier"),
        (json.dumps([1, 2]).encode(), 422, "invalid request"),
        (
            json.dumps({"verifier": "math", "items": [{}] * 65}).encode(),
            413,
            "65 items exceed the limit of 64",
        ),
        (
            json.dumps({"verifier": "math", "items": [{"response": "x" * 60_000}]}).encode(),
            413,
            "exceeds the limit",
        ),
    ],
)
def test_client_errors_are_4xx_with_a_message(server, content, status, message):
    r = server.post("/score", content=content, headers={"content-type": "application/json"})
    assert r.status_code == status
    assert message in r.json()["detail"]


def test_oversized_chunked_body_without_length(server):
    def chunks():
        yield b'{"verifier": "math", "items": ['
        for _ in range(200):
            yield json.dumps({"response": "y" * 500}).encode() + b","
        yield b"{}]}"

    r = server.post("/score", content=chunks())
    assert r.status_code == 413


def test_slow_item_times_out_without_blocking_others(server):
    slow = {"response": "\\boxed{9^{9^{9}}}", "reference": "5"}  # SymPy would try to evaluate this
    opts = {"timeout_s": 60}  # math-verify's own timeout out of the way: the pool's kill must act

    def post(items, timeout_s):
        return server.post(
            "/score", json={"verifier": "math", "items": items, "options": opts, "timeout_s": timeout_s}
        )

    with ThreadPoolExecutor(2) as ex:
        slow_req = ex.submit(post, [slow, MATH_OK], 3)
        time.sleep(0.3)
        quick = [ex.submit(post, [MATH_OK], 20) for _ in range(5)]
        quick_rewards = [f.result().json()["rewards"][0]["reward"] for f in quick]
        slow_rewards = slow_req.result().json()["rewards"]
    assert quick_rewards == [1.0] * 5
    assert slow_rewards[0]["reward"] == 0 and "timed out after 3s" in slow_rewards[0]["details"]["error"]
    assert slow_rewards[1]["reward"] == 1.0
    # the killed worker was replaced
    assert post([MATH_OK], 20).json()["rewards"][0]["reward"] == 1.0


def test_health_verifiers_metrics(server):
    health = server.get("/health").json()
    assert health["status"] == "ok" and {"math", "constraints"} <= set(health["verifiers"])
    listed = {v["name"]: v for v in server.get("/verifiers").json()}
    assert listed["math"]["version"] and listed["math"]["source"].startswith("m1-pipeline")
    server.post("/score", json={"verifier": "math", "items": [MATH_OK]})
    server.post("/score", content=b"{")
    metrics = server.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'm1_reward_requests_total{status="200",verifier="math"}' in text
    assert 'm1_reward_requests_total{status="400",verifier="-"}' in text
    assert 'm1_reward_items_total{outcome="ok",verifier="math"}' in text
    assert "m1_reward_request_seconds_bucket" in text
