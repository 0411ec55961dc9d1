"""Test-suite generation against the tests' fake OpenAI-compatible server (a real HTTP server on loopback).

No LLM runs here, so the server replies with canned inputs in the exact response format; what is
under test is the client and, above all, the agreement logic over real sandboxed reference solutions.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.fakes.openai import serve
from verifiers.testgen import EndpointError, Solution, generate_suite

PROBLEM = "Given n and then n integers, print the maximum of the integers. 1 <= n <= 10^5, |a_i| <= 10^9."
INPUTS = ["3\n1 5 2\n", "1\n-7\n", "4\n-1 -2 -3 -4\n", "2\n1000000000 -1000000000\n", "3\n1 5 2\n", "0\n\n"]


def _chat(body: dict) -> list[str]:
    if body["model"] == "broken":
        return ["Sure! Here are some inputs: 1 2 3"]
    return ["```json\n" + json.dumps({"inputs": INPUTS}) + "\n```"]


@pytest.fixture(scope="module")
def endpoint():
    with serve(chat=_chat) as (root, server):
        yield f"{root}/v1", server.seen


MAX_A = "n = int(input())\nprint(max(map(int, input().split())))"
MAX_B = (
    "import sys\ndata = sys.stdin.read().split()\nprint(sorted(int(x) for x in data[1:1 + int(data[0])])[-1])"
)
# Wrong on all-negative input: starts its running maximum at 0.
MAX_WRONG = (
    "n = int(input())\nbest = 0\nfor x in map(int, input().split()):\n    best = max(best, x)\nprint(best)"
)


def test_keeps_only_inputs_the_references_agree_on(endpoint):
    url, seen = endpoint
    suite = generate_suite(
        PROBLEM,
        [Solution(MAX_A), Solution(MAX_B), Solution(MAX_WRONG)],
        endpoint=url,
        model="local-test",
        api_key="secret",
        n_inputs=6,
    )
    kept = {t["input"]: t["output"].strip() for t in suite.tests}
    assert kept == {"3\n1 5 2\n": "5", "2\n1000000000 -1000000000\n": "1000000000"}
    reasons = {r["input"]: r["reason"] for r in suite.rejected}
    assert "disagree" in reasons["1\n-7\n"]  # the wrong reference prints 0
    assert "disagree" in reasons["4\n-1 -2 -3 -4\n"]
    assert "runtime_error" in reasons["0\n\n"]  # max() of nothing: outside the constraints
    assert suite.summary() == {
        "proposed": 6,
        "kept": 2,
        "rejected": 3,
        "broken_solutions": 0,
    }  # one duplicate
    request = seen[-1]
    assert request.headers["authorization"] == "Bearer secret" and request.body["model"] == "local-test"
    assert request.body["messages"][1]["content"].startswith("Problem:\n" + PROBLEM)


def test_agreeing_references_keep_everything_valid(endpoint):
    url, _ = endpoint
    suite = generate_suite(PROBLEM, [Solution(MAX_A), Solution(MAX_B)], endpoint=url, model="local-test")
    assert [t["output"].strip() for t in suite.tests] == ["5", "-7", "-1", "1000000000"]


def test_broken_reference_is_reported_not_voted(endpoint):
    url, _ = endpoint
    suite = generate_suite(PROBLEM, [Solution("def (:"), Solution(MAX_A)], endpoint=url, model="local-test")
    assert suite.broken_solutions[0]["solution"] == 0 and "SyntaxError" in suite.broken_solutions[0]["error"]
    assert len(suite.tests) == 4  # the remaining reference decides alone


def test_endpoint_errors_are_clear(endpoint):
    url, _ = endpoint
    with pytest.raises(EndpointError, match="not JSON"):
        generate_suite(PROBLEM, [Solution(MAX_A)], endpoint=url, model="broken")
    with pytest.raises(EndpointError, match="404"):
        generate_suite(PROBLEM, [Solution(MAX_A)], endpoint=url + "/nope", model="local-test")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with pytest.raises(EndpointError, match="unreachable"):
        generate_suite(
            PROBLEM, [Solution(MAX_A)], endpoint=f"http://127.0.0.1:{dead}/v1", model="m", timeout_s=2
        )


def test_cli_writes_a_suite_per_problem(endpoint, tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    url, _ = endpoint
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        "\n".join(
            [
                json.dumps(
                    {
                        "id": "max",
                        "prompt": PROBLEM,
                        "solutions": [MAX_A, {"code": MAX_B, "language": "python"}],
                    }
                ),
                json.dumps({"id": "nosol", "prompt": PROBLEM}),
                "{broken",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "suites.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "verifiers",
            "testgen",
            "-i",
            str(problems),
            "-o",
            str(out),
            "--endpoint",
            url,
            "--model",
            "local-test",
            "--n-inputs",
            "6",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(r.get("tests", [])) for r in rows] == [4, 0, 0]
    assert rows[0]["testgen"]["kept"] == 4 and rows[0]["tests"][0] == {"input": "3\n1 5 2\n", "output": "5\n"}
    assert "needs `prompt` and `solutions`" in rows[1]["testgen"]["error"]
    assert "invalid JSON" in rows[2]["testgen"]["error"]
