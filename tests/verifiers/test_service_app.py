"""The reward service's FastAPI app in-process (`create_app`, its lifespan run by TestClient): scoring,
4xx answers with their messages, body and item limits, validation of verifiers and options, /health,
/verifiers, /metrics. The same contracts as tests/verifiers/test_service.py, without a server process.
"""

from __future__ import annotations

import asyncio
import json
import os

import httpx
import pytest
from fastapi.testclient import TestClient

from verifiers.service import ServiceSettings, create_app

LIMIT = 50 * 1024  # bytes per request body
MATH_OK = {"response": "so \\boxed{\\frac{1}{2}}", "reference": "0.5"}

PROBE = """
import time

from verifiers.base import Reward


class Probe:
    name, version = "probe", "2.1"

    def __init__(self, scale=1.0, fail_init=False):
        if fail_init:
            raise RuntimeError("no GPU here")
        if scale <= 0:
            raise ValueError("scale must be positive")
        self.scale = scale

    def verify(self, items):
        if any(item.get("explode") for item in items):
            raise RuntimeError("plugin bug")
        time.sleep(max(item.get("sleep", 0) for item in items))
        return [Reward(self.scale * len(item["response"]), {"tags": {"a"}}) for item in items]
"""

# No version attribute, and a close() that the service must call on the instance it validates with.
BARE = """
import os

from verifiers.base import Reward


class Bare:
    def __init__(self, ledger):
        self.ledger = ledger
        self._note("open")

    def _note(self, event):
        with open(self.ledger, "a") as f:
            f.write(f"{event} {os.getpid()}\\n")

    def verify(self, items):
        return [Reward(1.0) for _ in items]

    def close(self):
        self._note("close")


VERIFIERS = {"bare": Bare}
"""


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("service_plugins")
    (d / "probe.py").write_text(PROBE, encoding="utf-8")
    (d / "bare.py").write_text(BARE, encoding="utf-8")
    (d / "broken.py").write_text('raise ImportError("needs a GPU driver")\n', encoding="utf-8")
    return str(d)


def settings(plugin_dir: str) -> ServiceSettings:
    return ServiceSettings(
        workers=1, item_timeout_s=1.0, max_body_bytes=LIMIT, max_items=64, plugin_dirs=[plugin_dir]
    )


@pytest.fixture
def client(plugin_dir):
    # An app per test (its pool starts in milliseconds once the forkserver runs): fresh metrics each time.
    with TestClient(create_app(settings(plugin_dir))) as c:
        yield c


def score(client, verifier: str, items: list, **extra):
    return client.post("/score", json={"verifier": verifier, "items": items, **extra})


def samples(client) -> dict[str, float]:
    """The /metrics samples, by name and labels."""
    out = {}
    for line in client.get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def requests_total(client) -> dict[tuple[str, str], float]:
    prefix = "m1_reward_requests_total{"
    out = {}
    for key, value in samples(client).items():
        if key.startswith(prefix):
            labels = dict(part.split("=") for part in key[len(prefix) : -1].split(","))
            out[(labels["status"].strip('"'), labels["verifier"].strip('"'))] = value
    return out


def test_scores_a_mixed_batch(client):
    items = [MATH_OK, {"response": "the answer is 4", "reference": "4"}, "not an object", {"reference": "1"}]
    r = score(client, "math", items, options={"format_weight": 0.5})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["verifier"] == "math" and body["version"]
    rewards = body["rewards"]
    assert [x["reward"] for x in rewards] == [1.0, 0.5, 0.0, 0.0]  # the second is correct but not boxed
    assert rewards[2]["details"] == {"error": "item is not a JSON object (got str)"}
    assert "response" in rewards[3]["details"]["error"]

    r = score(
        client, "probe", [{"response": "abc"}, {"response": "x", "explode": True}, {"response": "abcdef"}]
    )
    assert r.json()["version"] == "2.1"
    rewards = r.json()["rewards"]
    assert [x["reward"] for x in rewards] == [3.0, 0.0, 6.0]
    assert rewards[0]["details"] == {"tags": "{'a'}"}  # what JSON cannot spell is sent as text, not a 500
    assert rewards[1]["details"] == {"error": "RuntimeError: plugin bug"}
    assert (
        score(client, "probe", [{"response": "abc"}], options={"scale": 2}).json()["rewards"][0]["reward"]
        == 6
    )


def body_of(size: int) -> bytes:
    """A valid /score body of exactly `size` bytes (padded with JSON whitespace)."""
    core = json.dumps({"verifier": "probe", "items": [{"response": "ab"}]}).encode()
    return core + b" " * (size - len(core))


def test_body_size_limit_counts_bytes_declared_or_streamed(client):
    r = client.post("/score", content=body_of(LIMIT))  # exactly the limit: accepted
    assert r.status_code == 200 and r.json()["rewards"][0]["reward"] == 2.0

    r = client.post("/score", content=body_of(LIMIT + 1))
    assert r.status_code == 413
    assert r.json()["detail"] == f"request body of {LIMIT + 1} bytes exceeds the limit of {LIMIT} bytes"

    def chunks():  # no content-length: refused while reading
        yield b'{"verifier": "probe", "items": ['
        for _ in range(200):
            yield json.dumps({"response": "y" * 500}).encode() + b","
        yield b"{}]}"

    r = client.post("/score", content=chunks())
    assert r.status_code == 413 and r.json()["detail"] == f"request body exceeds the limit of {LIMIT} bytes"
    assert requests_total(client)[("413", "-")] == 2


def test_a_streamed_body_is_read_whole_up_to_the_limit(plugin_dir):
    """Over the ASGI transport a streamed body arrives in several messages: all are read and counted."""
    app = create_app(settings(plugin_dir))

    async def post(parts: list[bytes]) -> httpx.Response:
        async def stream():
            for part in parts:
                yield part

        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as c:
            return await c.post("/score", content=stream())

    async def scenario():
        async with app.router.lifespan_context(app):
            exact = body_of(LIMIT)
            ok = await post([exact[:10], exact[10 : LIMIT // 2], exact[LIMIT // 2 :]])
            over = await post([exact[:100], exact[100:], b" "])
            return ok, over

    ok, over = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert ok.status_code == 200 and ok.json()["rewards"][0]["reward"] == 2.0
    assert (
        over.status_code == 413
        and over.json()["detail"] == f"request body exceeds the limit of {LIMIT} bytes"
    )


@pytest.mark.parametrize(
    ("payload", "status", "detail", "label"),
    [
        (
            b'{"verifier": "probe", "items": [',
            400,
            "malformed JSON: Expecting value: line 1 column 33 (char 32)",
            "-",
        ),
        (b"\xff\xfe not utf-8", 400, "malformed JSON: ", "-"),
        (
            [1, 2],
            422,
            "invalid request: body: Input should be a valid dictionary or instance of ScoreRequest",
            "-",
        ),
        ({"items": []}, 422, "invalid request: verifier: Field required", "-"),
        (
            {"verifier": "probe", "items": {"a": 1}},
            422,
            "invalid request: items: Input should be a valid list",
            "-",
        ),
        # two errors: the first is reported
        ({"verifier": 3, "items": 4}, 422, "invalid request: verifier: Input should be a valid string", "-"),
        (
            {"verifier": "probe", "items": [], "x": 1},
            422,
            "invalid request: x: Extra inputs are not permitted",
            "-",
        ),
        (
            {"verifier": "probe", "items": [], "timeout_s": 0},
            422,
            "invalid request: timeout_s: Input should be greater than 0",
            "-",
        ),
        ({"verifier": "probe", "items": [{}] * 65}, 413, "65 items exceed the limit of 64 per request", "-"),
        ({"verifier": "nope", "items": []}, 422, "unknown verifier 'nope' (known: bare, code, ", "-"),
        (
            {"verifier": "broken", "items": []},
            422,
            "verifier 'broken' failed to load: ImportError: needs a",
            "-",
        ),
        (
            {"verifier": "probe", "items": [], "options": {"bogus": 1}},
            422,
            "options for verifier 'probe': Probe.__init__() got an unexpected keyword argument 'bogus'",
            "probe",
        ),
        (
            {"verifier": "probe", "items": [], "options": {"scale": -1}},
            422,
            "options for verifier 'probe': scale must be positive",
            "probe",
        ),
        (
            {"verifier": "probe", "items": [], "options": {"fail_init": True}},
            422,
            "verifier 'probe' cannot be created: RuntimeError: no GPU here",
            "probe",
        ),
    ],
    ids=[
        *("truncated-json", "not-utf8", "not-an-object", "no-verifier", "items-not-a-list", "two-errors"),
        *("extra-field", "zero-timeout", "too-many-items", "unknown-verifier", "plugin-failed-to-load"),
        *("unknown-option", "bad-option-value", "constructor-bug"),
    ],
)
def test_client_errors_are_4xx_with_a_message(client, payload, status, detail, label):
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    r = client.post("/score", content=content, headers={"content-type": "application/json"})
    assert r.status_code == status
    assert r.json()["detail"].startswith(detail)
    assert requests_total(client) == {(str(status), label): 1.0}  # client-chosen names are not labels


def test_options_are_validated_per_verifier_and_option_set(client, tmp_path):
    """Each (verifier, options) is instantiated once in the service to validate it, then closed; the
    verifier's own version, or "?" for a plugin without one, is in every answer."""
    ledger, other = tmp_path / "ledger", tmp_path / "other"
    me = str(os.getpid())

    def opened_here(path) -> list[str]:  # instances made by the service itself (not by a worker)
        return [line.split()[0] for line in path.read_text().splitlines() if line.split()[1] == me]

    for _ in range(2):
        r = score(client, "bare", [{"response": "x"}], options={"ledger": str(ledger)})
        assert r.status_code == 200 and r.json()["version"] == "?" and r.json()["rewards"][0]["reward"] == 1.0
    assert opened_here(ledger) == ["open", "close"]  # validated once, and closed
    assert score(client, "bare", [], options={"ledger": str(other)}).status_code == 200
    assert opened_here(other) == ["open", "close"]  # other options: validated again

    assert score(client, "probe", [], options={"scale": 2}).json()["version"] == "2.1"
    # a valid option set of a verifier does not let another, invalid one through
    r = score(client, "probe", [], options={"scale": 2, "bogus": 1})
    assert r.status_code == 422 and "bogus" in r.json()["detail"]


def test_items_time_out_at_the_request_timeout_capped_by_the_server(client):
    r = score(client, "probe", [{"response": "abc", "sleep": 10}, {"response": "ab"}], timeout_s=0.5)
    rewards = r.json()["rewards"]
    assert rewards[0] == {"reward": 0.0, "details": {"error": "timed out after 0.5s", "timeout": True}}
    assert rewards[1]["reward"] == 2.0
    # asking for more than the server's item_timeout_s gets the server's
    r = score(client, "probe", [{"response": "abc", "sleep": 10}], timeout_s=60)
    assert r.json()["rewards"][0]["details"] == {"error": "timed out after 1s", "timeout": True}
    s = samples(client)
    assert s['m1_reward_items_total{outcome="timeout",verifier="probe"}'] == 2
    assert s['m1_reward_items_total{outcome="ok",verifier="probe"}'] == 1


def test_health_verifiers_and_metrics(client, plugin_dir):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["workers"] == 1
    assert {"math", "constraints", "probe", "bare"} <= set(health["verifiers"])
    assert "broken" not in health["verifiers"]
    assert isinstance(health["uptime_s"], float) and 0 <= health["uptime_s"] < 600

    listed = {v["name"]: v for v in client.get("/verifiers").json()}
    assert listed["math"]["version"] and listed["math"]["source"].startswith("m1-pipeline")
    probe_path = os.path.join(plugin_dir, "probe.py")
    assert listed["probe"] == {
        "name": "probe",
        "version": "2.1",
        "source": probe_path,
        "target": f"{probe_path}:Probe",
        "load_error": None,
    }
    assert listed["bare"]["version"] is None
    assert listed["broken"]["load_error"] == "ImportError: needs a GPU driver"
    assert client.get("/openapi.json").json()["info"]["title"] == "m1 reward service"

    score(client, "probe", [{"response": "ab"}, {"response": "x", "explode": True}])
    client.post("/score", content=b"{")
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    lines = metrics.text.splitlines()
    for name, kind, help_text in [
        ("m1_reward_requests_total", "counter", "HTTP requests to /score by outcome"),
        ("m1_reward_items_total", "counter", "Items scored by outcome (ok, error, timeout)"),
        ("m1_reward_request_seconds", "histogram", "Wall time of /score requests"),
        ("m1_reward_items_in_flight", "gauge", "Items queued or being scored"),
    ]:
        assert f"# HELP {name} {help_text}" in lines and f"# TYPE {name} {kind}" in lines
    s = samples(client)
    assert requests_total(client) == {("200", "probe"): 1.0, ("400", "-"): 1.0}
    assert s['m1_reward_items_total{outcome="ok",verifier="probe"}'] == 1
    assert s['m1_reward_items_total{outcome="error",verifier="probe"}'] == 1
    assert s["m1_reward_items_in_flight"] == 0
    buckets = [k for k in s if k.startswith("m1_reward_request_seconds_bucket{")]
    bounds = [k.split('le="')[1].split('"')[0] for k in buckets]
    assert bounds == [
        *(
            "0.005",
            "0.01",
            "0.025",
            "0.05",
            "0.1",
            "0.25",
            "0.5",
            "1.0",
            "2.5",
            "5.0",
            "10.0",
            "30.0",
            "60.0",
        ),
        "+Inf",
    ]
    assert all('verifier="probe"' in k for k in buckets)
    assert s['m1_reward_request_seconds_count{verifier="probe"}'] == 1


def test_without_its_lifespan_the_app_refuses_to_score(plugin_dir):
    client = TestClient(create_app(settings(plugin_dir)))  # not entered: no pool
    r = score(client, "probe", [{"response": "a"}])
    assert r.status_code == 503 and r.json()["detail"] == "service is starting or stopping"
    assert client.get("/health").json()["status"] == "starting"
    assert requests_total(client) == {("503", "probe"): 1.0}
