"""The project's one OpenAI-compatible client (verifiers/endpoint.py) against a real HTTP server on loopback:
what each request carries (model, messages, n, parameters, API key), how replies become texts (ordering,
batching of 16 prompts, missing content), which failures are retried (connection drops, timeouts, 429 and
5xx, with jittered exponential backoff) and which are not (4xx, malformed replies), what the errors say,
and how many requests are in flight at once."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai import DROP, Loopback, Seen, chat_reply
from verifiers.endpoint import Endpoint, EndpointError, EndpointUnavailable


@pytest.fixture
def server(openai_loopback) -> Iterator[tuple[str, Loopback]]:
    """(the server's root URL, its state), reset for each test."""
    root, owner = openai_loopback
    owner.seen.clear()
    owner.done.clear()
    yield root, owner
    owner.done.set()  # a handler still stalled from this test returns now


def echo_chat(seen: Seen) -> tuple[int, dict]:
    """n choices, each naming the last message and its own index."""
    if seen.path.endswith("/chat/completions"):
        last = seen.body["messages"][-1]["content"]
        return 200, chat_reply([f"{last}#{i}" for i in range(seen.body.get("n", 1))])
    return 404, {"error": "no route"}


# -- what a request carries --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt,system,messages",
    [
        ("hi", None, [{"role": "user", "content": "hi"}]),
        ("hi", "Be brief.", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "hi"},
            ],
            None,
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "hi"},
            ],
        ),
        (
            [{"role": "user", "content": "hi"}],
            "S",
            [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
        ),
    ],
)
def test_chat_sends_the_messages_model_n_and_parameters(server, prompt, system, messages):
    root, owner = server
    owner.reply = echo_chat
    got = Endpoint(url=f"{root}/v1", model="policy-7").chat(
        [prompt], n=2, system=system, temperature=0.5, max_tokens=9
    )
    assert got == [["hi#0", "hi#1"]]
    (seen,) = owner.seen
    assert seen.method == "POST" and seen.path == "/v1/chat/completions"
    assert seen.body == {
        "model": "policy-7",
        "messages": messages,
        "n": 2,
        "temperature": 0.5,
        "max_tokens": 9,
    }


@pytest.mark.parametrize(
    "api_key,env_key,header",
    [
        ("given", None, "Bearer given"),
        (None, "from-env", "Bearer from-env"),
        ("given", "from-env", "Bearer given"),
    ]
    + [(None, None, None)],  # no key at all: no Authorization header, not "Bearer None"
)
def test_the_api_key_is_sent_as_a_bearer_token(server, monkeypatch, api_key, env_key, header):
    root, owner = server
    owner.reply = echo_chat
    if env_key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", env_key)
    Endpoint(url=f"{root}/v1", api_key=api_key).chat(["x"])
    assert owner.seen[0].headers.get("authorization") == header


@pytest.mark.parametrize("prefix", ["/v1", "/v1/", "/v1//", "/openai/vX"])
def test_any_base_path_with_or_without_a_trailing_slash_reaches_its_routes(server, prefix):
    root, owner = server
    owner.reply = lambda seen: (418, "teapot") if seen.method == "POST" else (200, {"data": [{"id": "m"}]})
    endpoint = Endpoint(url=root + prefix)
    assert endpoint.models() == ["m"]
    with pytest.raises(EndpointError) as err:  # the message names the URL that was asked
        endpoint.chat(["x"])
    path = prefix.rstrip("/") + "/chat/completions"
    assert str(err.value) == f"{root}{path}: HTTP 418: teapot"
    assert [s.path for s in owner.seen] == [prefix.rstrip("/") + "/models", path]


# -- how replies become texts -------------------------------------------------------------------------


def test_a_server_that_returns_fewer_than_n_choices_is_asked_for_the_rest(server):
    root, owner = server
    count = iter(range(100))

    def at_most_two(seen: Seen) -> tuple[int, Any]:
        if len(owner.seen) > 8:  # a client that never stops asking fails instead of hanging
            return 400, {"error": "too many requests"}
        return 200, chat_reply([f"r{next(count)}" for _ in range(min(2, seen.body["n"]))])

    owner.reply = at_most_two
    assert Endpoint(url=f"{root}/v1").chat(["p"], n=5) == [["r0", "r1", "r2", "r3", "r4"]]
    assert [b["n"] for b in owner.bodies()] == [5, 3, 1]


def test_chat_choices_are_ordered_by_index_and_missing_content_is_empty(server):
    root, owner = server
    choices = [
        {"index": 3, "message": {"content": "d"}},
        {"index": 1, "message": {"content": None}},
        {"message": {"content": "a"}},  # no index: first
        {"index": 2},  # no message
    ]
    owner.reply = lambda seen: (200, {"choices": choices})
    assert Endpoint(url=f"{root}/v1").chat(["p"], n=4) == [["a", "", "", "d"]]


@pytest.mark.parametrize(
    "reply,why",
    [
        ({"choices": []}, "reply without choices"),
        ({"object": "error"}, "reply without choices"),
        ({"choices": ["just text"]}, "reply is not a chat completion"),
        ({"choices": [{"index": 0, "message": "hi"}]}, "reply is not a chat completion"),
        (
            {"choices": [{"index": "0", "message": {}}, {"index": 1, "message": {}}]},
            "reply is not a chat completion",
        ),
    ],
)
def test_a_reply_that_is_not_a_chat_completion_is_an_error(server, reply, why):
    root, owner = server
    owner.reply = lambda seen: (200, reply)
    with pytest.raises(EndpointError) as err:
        Endpoint(url=f"{root}/v1").chat(["p"], n=2)
    assert str(err.value) == f"{root}/v1/chat/completions: {why}"
    assert not isinstance(err.value, EndpointUnavailable) and len(owner.seen) == 1  # not retried


def completions(seen: Seen) -> tuple[int, dict]:
    """n texts per prompt, choices in reverse order (a server may send them in any order)."""
    n, prompts = seen.body["n"], seen.body["prompt"]
    choices = [{"index": i * n + j, "text": f"{p}/{j}"} for i, p in enumerate(prompts) for j in range(n)]
    return 200, {"object": "text_completion", "choices": choices[::-1]}


def test_completions_go_16_prompts_a_request_with_n_texts_each(server):
    root, owner = server
    owner.reply = completions
    prompts = [f"p{i}" for i in range(20)]
    got = Endpoint(url=f"{root}/v1", model="base", concurrency=1).complete(prompts, n=2, max_tokens=5)
    assert got == [[f"p{i}/0", f"p{i}/1"] for i in range(20)]
    assert owner.bodies() == [
        {"model": "base", "prompt": prompts[:16], "n": 2, "max_tokens": 5},
        {"model": "base", "prompt": prompts[16:], "n": 2, "max_tokens": 5},
    ]
    assert {s.path for s in owner.seen} == {"/v1/completions"}
    owner.seen.clear()
    assert Endpoint(url=f"{root}/v1").complete(prompts[:16]) == [
        [f"p{i}/0"] for i in range(16)
    ]  # n=1 by default
    assert [b["n"] for b in owner.bodies()] == [1]


@pytest.mark.parametrize(
    "reply,why",
    [
        ({"choices": [{"index": 0}, {"index": 1}]}, "reply is not a completion"),  # no text
        ({"choices": [{"index": 0, "text": "a"}, {"index": 9, "text": "b"}]}, "reply is not a completion"),
        ({"object": "error"}, "reply is not a completion"),
        ({"choices": [{"index": 0, "text": "a"}]}, "reply without 2 choices per prompt"),
        ({"choices": [{"index": i, "text": "a"} for i in (0, 0, 1)]}, "reply without 2 choices per prompt"),
        ({"choices": [{"index": i, "text": "a"} for i in (0, 1, 2)]}, "reply without 2 choices per prompt"),
    ],
)
def test_a_reply_that_is_not_n_completions_is_an_error(server, reply, why):
    root, owner = server
    owner.reply = lambda seen: (200, reply)
    with pytest.raises(EndpointError) as err:
        Endpoint(url=f"{root}/v1").complete(["p", "q"], n=2)
    assert str(err.value) == f"{root}/v1/completions: {why}"


@pytest.mark.parametrize(
    "reply,ids",
    [
        ({"object": "list", "data": [{"id": "a"}, {"object": "model"}, {"id": "b"}]}, ["a", "", "b"]),
        ({"object": "list"}, []),
    ],
)
def test_models_lists_the_ids_with_a_get(server, reply, ids):
    root, owner = server
    owner.reply = lambda seen: (200, reply) if seen.method == "GET" else (405, "GET only")
    assert Endpoint(url=f"{root}/v1").models() == ids
    assert [(s.method, s.path) for s in owner.seen] == [("GET", "/v1/models")]


def test_an_empty_batch_sends_nothing(server):
    root, owner = server
    endpoint = Endpoint(url=f"{root}/v1", concurrency=8)
    assert endpoint.chat([]) == [] and endpoint.complete([]) == []
    assert owner.seen == []


# -- failures and retries -----------------------------------------------------------------------------

BODY = "x" * 200 + "TAIL"  # a reply body longer than the 200 characters an error quotes


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 408])
def test_transient_statuses_are_retried_then_reported(server, status):
    root, owner = server
    owner.reply = lambda seen: (status, BODY)
    with pytest.raises(EndpointUnavailable) as err:
        Endpoint(url=f"{root}/v1", retries=2, backoff_s=0.001).chat(["p"])
    assert str(err.value) == f"{root}/v1/chat/completions: HTTP {status}: {BODY[:200]} (after 3 attempts)"
    assert len(owner.seen) == 3


def test_a_transient_failure_then_a_reply_succeeds(server):
    root, owner = server
    owner.reply = lambda seen: (503, "busy") if len(owner.seen) == 1 else echo_chat(seen)
    assert Endpoint(url=f"{root}/v1", retries=1, backoff_s=0.001).chat(["p"]) == [["p#0"]]
    assert len(owner.seen) == 2


def test_a_dropped_connection_is_retried(server):
    root, owner = server
    owner.reply = lambda seen: (0, DROP) if len(owner.seen) == 1 else echo_chat(seen)
    assert Endpoint(url=f"{root}/v1", retries=1, backoff_s=0.001).chat(["p"]) == [["p#0"]]
    assert len(owner.seen) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_fail_at_once(server, status):
    root, owner = server
    owner.reply = lambda seen: (status, BODY)
    with pytest.raises(EndpointError) as err:
        Endpoint(url=f"{root}/v1", retries=3, backoff_s=0.001).chat(["p"])
    assert not isinstance(err.value, EndpointUnavailable)
    assert str(err.value) == f"{root}/v1/chat/completions: HTTP {status}: {BODY[:200]}"
    assert len(owner.seen) == 1


@pytest.mark.parametrize(
    "payload,why",
    [
        ("<html>" + BODY, f"reply is not JSON: {('<html>' + BODY)[:200]!r}"),
        ([{"choices": []}], "reply is not a JSON object"),
    ],
)
def test_a_reply_that_is_not_a_json_object_fails_at_once(server, payload, why):
    root, owner = server
    owner.reply = lambda seen: (200, payload)
    with pytest.raises(EndpointError) as err:
        Endpoint(url=f"{root}/v1", retries=3).chat(["p"])
    assert str(err.value) == f"{root}/v1/chat/completions: {why}"
    assert len(owner.seen) == 1


def test_negative_retries_are_refused():
    Endpoint(url="http://127.0.0.1:9/v1", retries=0)
    with pytest.raises(ValueError, match=r"\nretries\n  Input should be greater than or equal to 0 "):
        Endpoint(url="http://127.0.0.1:9/v1", retries=-1)


def test_an_unreachable_endpoint_names_the_transport_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with pytest.raises(EndpointUnavailable) as err:
        Endpoint(url=f"http://127.0.0.1:{dead}/v1", retries=1, backoff_s=0.001).chat(["p"])
    message = str(err.value)
    assert message.startswith(f"http://127.0.0.1:{dead}/v1/chat/completions: unreachable (ConnectError: ")
    assert message.endswith(") (after 2 attempts)")


def test_a_request_is_cut_off_at_the_timeout(server):
    root, owner = server

    def stalls(seen: Seen) -> tuple[int, dict]:
        owner.done.wait(5)  # far longer than the timeout; released at teardown
        return echo_chat(seen)

    owner.reply = stalls
    t0 = time.monotonic()
    with pytest.raises(EndpointUnavailable) as err:
        Endpoint(url=f"{root}/v1", timeout_s=0.2, retries=0).chat(["p"])
    assert time.monotonic() - t0 < 2
    assert (
        str(err.value)
        == f"{root}/v1/chat/completions: unreachable (ReadTimeout: timed out) (after 1 attempts)"
    )


def test_retries_back_off_exponentially_with_full_jitter(server):
    # The waits are uniform(0, backoff * 2**(k-1)) from the random module; with its seed fixed they are
    # known, and the server sees them as the gaps between attempts (plus a little transport time).
    root, owner = server
    owner.reply = lambda seen: (503, "busy")
    seed, backoff = 128, 0.2  # a seed whose waits tell apart any other base, factor or exponent
    rng = random.Random(seed)
    waits = [rng.uniform(0, backoff * 2 ** (k - 1)) for k in (1, 2, 3)]
    random.seed(seed)
    with pytest.raises(EndpointUnavailable):
        Endpoint(url=f"{root}/v1", retries=3, backoff_s=backoff).chat(["p"])
    times = [s.at for s in owner.seen]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(gaps) == 3
    for gap, wait in zip(gaps, waits, strict=True):
        assert wait - 0.005 <= gap <= wait + 0.3, (gaps, waits)


# -- requests in flight -------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency,prompts,peak", [(2, 4, 2), (8, 2, 2), (3, 6, 3), (1, 3, 1)])
def test_at_most_concurrency_requests_are_in_flight(server, concurrency, prompts, peak):
    root, owner = server
    state = {"now": 0, "peak": 0}
    cond = threading.Condition()

    def gathers(seen: Seen) -> tuple[int, dict]:
        # hold each request until `peak` are in flight (or 1 s), then a little longer, so that a client
        # sending more at once than it should is seen doing so
        with cond:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            cond.notify_all()
            cond.wait_for(lambda: state["now"] >= peak, timeout=1)
        time.sleep(0.05)
        with cond:
            state["now"] -= 1
        return echo_chat(seen)

    owner.reply = gathers
    texts = [f"q{i}" for i in range(prompts)]
    got = Endpoint(url=f"{root}/v1", concurrency=concurrency).chat(texts)
    assert got == [[f"q{i}#0"] for i in range(prompts)]  # in prompt order whatever the arrival order
    assert state["peak"] == peak
