"""API keys on the services other machines reach: 401 without the right bearer token, /health open, and
no non-loopback bind without a key unless --insecure."""

from __future__ import annotations

import threading

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from typer.testing import CliRunner

from flows.cli import app as cli
from flows.errors import InputError
from flows.serve_auth import check_exposure, is_loopback, protect

from .conftest import API_KEY

MATH_OK = {"response": "so \\boxed{\\frac{1}{2}}", "reference": "0.5"}


@pytest.fixture
def protected_app():
    """Any FastAPI app (here one with a streamed route, as a model server has) behind protect()."""
    import uvicorn

    app = FastAPI()

    @app.get("/health")
    def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    def models():
        return {"data": [{"id": "m"}]}

    @app.get("/v1/stream")
    def stream():
        return StreamingResponse((f"data: {i}\n\n" for i in range(3)), media_type="text/event-stream")

    server = uvicorn.Server(
        uvicorn.Config(protect(app, "s3cret"), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.02)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(5)


def test_bearer_token_required_but_for_health(protected_app):
    get = lambda path, **headers: httpx.get(protected_app + path, headers=headers, timeout=10)  # noqa: E731
    assert get("/health").status_code == 200
    missing = get("/v1/models")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["detail"].startswith("missing API key")
    for wrong in ("Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret"):
        r = get("/v1/models", authorization=wrong)
        assert r.status_code == 401 and r.json()["detail"].startswith("wrong API key"), wrong
    assert get("/v1/models", authorization="Bearer s3cret").json() == {"data": [{"id": "m"}]}
    assert get("/v1/models", authorization="bearer s3cret").status_code == 200  # the scheme is caseless
    streamed = get("/v1/stream", authorization="Bearer s3cret")
    assert streamed.text == "data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert get("/v1/stream").status_code == 401
    assert get("/nowhere").status_code == 401  # nothing about the app leaks before the key


def test_protect_without_a_key_changes_nothing():
    app = FastAPI()
    assert protect(app, None) is app and protect(app, "") is app and not app.user_middleware


@pytest.mark.slow
def test_reward_service_takes_the_key_from_m1_api_key(reward_service):
    url = reward_service["url"]
    body = {"verifier": "math", "items": [MATH_OK]}
    assert httpx.get(f"{url}/health", timeout=10).json()["status"] == "ok"
    assert httpx.post(f"{url}/score", json=body, timeout=30).status_code == 401
    wrong = httpx.post(f"{url}/score", json=body, headers={"Authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401
    for path in ("/metrics", "/verifiers"):
        assert httpx.get(f"{url}{path}", timeout=10).status_code == 401
    ok = reward_service["client"].post("/score", json=body)  # sends Authorization: Bearer API_KEY
    assert ok.status_code == 200 and ok.json()["rewards"][0]["reward"] == 1.0
    assert reward_service["client"].get("/verifiers").status_code == 200


def test_a_non_loopback_address_without_a_key_is_refused():
    res = CliRunner().invoke(cli, ["serve", "rewards", "--host", "0.0.0.0"], env={"M1_API_KEY": ""})
    assert isinstance(res.exception, InputError)
    assert "refusing to serve 0.0.0.0 without an API key" in str(res.exception)
    assert "--api-key" in str(res.exception) and "--insecure" in str(res.exception)


def test_exposure_rules(capsys):
    for host in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost"):
        assert is_loopback(host), host
        assert check_exposure(host, None, False, command="t") is None
    for host in ("0.0.0.0", "::", "", "10.1.2.3", "192.168.0.7", "no-such-host.invalid"):
        assert not is_loopback(host), host
        with pytest.raises(InputError, match="refusing to serve"):
            check_exposure(host, None, False, command="t")
        assert check_exposure(host, API_KEY, False, command="t") == API_KEY
    assert check_exposure("0.0.0.0", "", True, command="m1 serve model") is None  # empty: no key
    assert "m1 serve model: serving 0.0.0.0 without an API key (--insecure)" in capsys.readouterr().err


@pytest.mark.slow
def test_model_server_takes_the_key_and_the_openai_client_sends_it(tmp_path):
    """`m1 serve model --api-key`: the official client with the key is served, without it gets 401."""
    import os
    import socket
    import subprocess
    import sys
    import time

    import openai

    from flows.config import ModelConfig
    from flows.model_settings import fresh_model
    from m1model import train_tokenizer
    from m1model.policy import save_policy

    tokenizer = train_tokenizer([f"the quick brown fox {i} jumps" for i in range(200)], vocab_size=300)
    save_policy(fresh_model(ModelConfig(vocab_size=300), tokenizer), tokenizer, tmp_path / "ckpt")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-c", "from flows.cli import main; main()", "serve", "model"]
    cmd += [
        "--checkpoint",
        str(tmp_path / "ckpt"),
        "--port",
        str(port),
        "--api-key",
        "k3y",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=os.environ | {"M1_API_KEY": ""})
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        good = openai.OpenAI(base_url=f"{base}/v1", api_key="k3y")
        out = good.completions.create(model="ckpt", prompt="the quick", max_tokens=3, temperature=0)
        assert out.choices[0].finish_reason in ("stop", "length")
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0).models.list()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
