"""Test-suite generation's edges (verifiers/testgen.py): reading reference solutions from a row, reading
the model's reply, the request it is sent (against a real chat-completions server on loopback), and
`build_suite` over real sandboxed solutions: input normalisation, the 1 MiB input limit, unavailable or
unbuildable solutions, limits, tolerance, undecodable output and which references must agree."""

from __future__ import annotations

import json
import random
import shutil
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandboxes import Limits
from verifiers.endpoint import Endpoint, EndpointError, EndpointUnavailable
from verifiers.testgen import (
    MAX_INPUT_BYTES,
    SYSTEM_PROMPT,
    Solution,
    build_suite,
    generate_suite,
    request_inputs,
    solutions_of,
)

ECHO = "print(int(input()))"
ABS = "print(abs(int(input())))"  # agrees with ECHO on non-negative inputs only


class Model:
    """A chat-completions server whose reply content is ``self.content`` (or what ``self.reply`` returns
    for a request body, as (status, JSON)); it logs each request body."""

    def __init__(self) -> None:
        self.content = json.dumps({"inputs": ["1", "2"]})
        self.reply: Callable[[dict], tuple[int, Any]] | None = None
        self.bodies: list[dict] = []
        self.done = threading.Event()

    def answer(self, body: dict) -> tuple[int, Any]:
        self.bodies.append(body)
        if self.reply is not None:
            return self.reply(body)
        return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": self.content}}]}


@pytest.fixture
def model(openai_loopback) -> Iterator[tuple[str, Model]]:
    """(base URL ending in /v1, a fresh model answering there)."""
    root, owner = openai_loopback
    model = Model()
    owner.reply = lambda seen: model.answer(seen.body)
    yield f"{root}/v1", model
    model.done.set()


# -- reading a row and a reply ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row,solutions",
    [
        ({"solutions": ["print(1)"]}, [Solution("print(1)", "python")]),
        ({"solutions": [{"code": "int main(){}", "language": "cpp"}]}, [Solution("int main(){}", "cpp")]),
        ({"solutions": [{"code": "print(2)"}]}, [Solution("print(2)", "python")]),
        ({"solutions": [{"language": "python"}, 42, None, {"code": 5}, ["x"], "ok"]}, [Solution("ok")]),
        ({"solutions": "print(1)"}, []),  # not a list
        ({}, []),
    ],
)
def test_solutions_of_reads_strings_and_code_objects(row, solutions):
    assert solutions_of(row) == solutions


@pytest.mark.parametrize(
    "content,inputs",
    [
        ('{"inputs": ["1", "2\\n"]}', ["1", "2\n"]),
        ('["3", "4"]', ["3", "4"]),  # a bare list is the inputs
        ('Here you go:\n```json\n{"inputs": ["5"]}\n```', ["5"]),
        ('```\n{"inputs": ["6"]}\n```', ["6"]),
        (
            '{"inputs": [7, {"n": 1}, true, null, [1, 2]]}',
            ["7", '{"n": 1}', "true", "null", "[1, 2]"],
        ),  # as JSON
    ],
)
def test_the_reply_is_read_as_a_json_list_of_inputs(model, content, inputs):
    url, m = model
    m.content = content
    assert request_inputs(Endpoint(url=url), "P") == inputs


@pytest.mark.parametrize(
    "content,error",
    [
        ('{"tests": ["1"]}', 'model reply has no "inputs" list'),
        ('{"inputs": "1 2"}', 'model reply has no "inputs" list'),
        ('"1 2"', 'model reply has no "inputs" list'),
        ("Sure! 1 2 3", "model reply is not JSON: Expecting value"),
    ],
)
def test_a_reply_without_an_inputs_list_is_an_error(model, content, error):
    url, m = model
    m.content = content
    with pytest.raises(EndpointError) as err:
        request_inputs(Endpoint(url=url), "P")
    assert str(err.value) == error


def test_request_inputs_asks_for_json_and_keeps_at_most_n_inputs(model):
    url, m = model
    m.content = json.dumps({"inputs": [str(i) for i in range(12)]})
    assert request_inputs(Endpoint(url=url, model="gen"), "Sum two numbers.") == [
        str(i) for i in range(10)
    ]  # 10 by default
    assert request_inputs(Endpoint(url=url, model="gen"), "P", n_inputs=3, temperature=0.2) == ["0", "1", "2"]
    assert m.bodies == [
        {
            "model": "gen",
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "Problem:\nSum two numbers.\n\nWrite 10 test inputs."},
            ],
            "n": 1,
            "temperature": 0.7,
            "response_format": {"type": "json_object"},
        },
        {
            "model": "gen",
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "Problem:\nP\n\nWrite 3 test inputs."},
            ],
            "n": 1,
            "temperature": 0.2,
            "response_format": {"type": "json_object"},
        },
    ]


# -- generate_suite: the endpoint it builds and what it passes on -------------------------------------


def test_generate_suite_defaults_and_the_options_it_passes_on(model):
    url, m = model
    m.content = json.dumps({"inputs": ["1", "-2", "3"]})
    suite = generate_suite("P", [Solution(ECHO)], endpoint=url)
    assert suite.summary() == {"proposed": 3, "kept": 3, "rejected": 0, "broken_solutions": 0}
    assert m.bodies[-1]["model"] == "default"
    assert m.bodies[-1]["messages"][1]["content"].endswith("Write 10 test inputs.")
    suite = generate_suite("P", [Solution(ECHO)], endpoint=Endpoint(url=url, model="mine"), n_inputs=2)
    assert [t["input"] for t in suite.tests] == ["1\n", "-2\n"] and suite.proposed == 2
    assert m.bodies[-1]["model"] == "mine"
    with pytest.raises(ValueError, match="unknown sandbox backend 'nowhere'"):
        generate_suite("P", [Solution(ECHO)], endpoint=url, backend="nowhere")
    m.content = json.dumps({"inputs": ["1"]})
    slow = Solution("import time\ntime.sleep(2)\nprint(1)")
    suite = generate_suite("P", [slow], endpoint=url, limits=Limits(wall_s=0.3))
    assert suite.tests == [] and suite.rejected[0]["reason"].startswith("solution 0: timeout")


def test_generate_suite_retries_twice_with_its_timeout(model):
    url, m = model

    def stalls(body: dict) -> tuple[int, Any]:
        m.done.wait(5)  # far past the timeout; released at teardown
        return 200, {"choices": []}

    m.reply = stalls
    random.seed(309)  # waits of 0.03 s in all (full jitter draws from the random module)
    with pytest.raises(EndpointUnavailable) as err:
        generate_suite("P", [Solution(ECHO)], endpoint=url, timeout_s=0.2)
    assert (
        str(err.value) == f"{url}/chat/completions: unreachable (ReadTimeout: timed out) (after 3 attempts)"
    )
    assert len(m.bodies) == 3


# -- build_suite over real solutions ------------------------------------------------------------------

LEN = "import sys\nprint(len(sys.stdin.read()))"


def test_inputs_end_in_a_newline_and_repeat_only_once():
    suite = build_suite(["3", "3\n", "4", "-5\n"], [Solution(ECHO)])  # the default backend: process
    assert suite.tests == [
        {"input": "3\n", "output": "3\n"},
        {"input": "4\n", "output": "4\n"},
        {"input": "-5\n", "output": "-5\n"},
    ]
    assert suite.proposed == 4 and suite.rejected == []


def test_inputs_over_one_mib_are_rejected_shortened():
    at_limit, over = "y" * (MAX_INPUT_BYTES - 1), "x" * MAX_INPUT_BYTES  # each gets its newline
    suite = build_suite([at_limit, over], [Solution(LEN)])
    assert suite.tests == [{"input": at_limit + "\n", "output": f"{MAX_INPUT_BYTES}\n"}]
    assert suite.rejected == [{"input": "x" * 200 + "...", "reason": "input over 1 MiB"}]


def test_when_no_solution_builds_every_input_is_rejected():
    suite = build_suite(["x" * MAX_INPUT_BYTES, "1"], [Solution("def (:"), Solution("x", "cobol")])
    assert suite.broken_solutions == [
        {"solution": 0, "error": "SyntaxError: invalid syntax (main.py, line 1)"},
        {"solution": 1, "error": "language 'cobol' unavailable"},
    ]
    assert suite.rejected == [
        {"input": "x" * 200 + "...", "reason": "input over 1 MiB"},
        {"input": "1\n", "reason": "no reference solution builds"},
    ]
    assert suite.tests == []


def test_an_unavailable_language_has_no_vote():
    suite = build_suite(["-1"], [Solution("x", "fortran"), Solution(ECHO)])
    assert suite.broken_solutions == [{"solution": 0, "error": "language 'fortran' unavailable"}]
    assert suite.tests == [{"input": "-1\n", "output": "-1\n"}]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on this machine")
def test_a_solution_that_does_not_compile_reports_the_compilers_words():
    broken = "int main( { return x y z; }\nfoo bar;\nint g() { return q; }\n"
    suite = build_suite(["-1"], [Solution(broken, "cpp"), Solution(ECHO)])
    ((entry),) = suite.broken_solutions
    assert entry["solution"] == 0 and entry["error"].startswith("main.cpp:1:")
    assert len(entry["error"]) == 300  # the first 300 characters of a longer report
    assert suite.tests == [{"input": "-1\n", "output": "-1\n"}]


def test_the_limits_apply_to_every_run():
    hungry = Solution("x = bytearray(300 * 2**20)\nprint(len(x))")
    assert build_suite(["1"], [hungry]).tests == [{"input": "1\n", "output": f"{300 * 2**20}\n"}]  # 512 MB
    suite = build_suite(["1"], [hungry], limits=Limits(memory_mb=256))
    assert suite.rejected[0]["reason"].startswith("solution 0: memory")


def test_undecodable_output_is_kept_with_replacement_characters():
    raw = Solution('import sys\nsys.stdout.buffer.write(b"\\xff7\\n")')
    assert build_suite(["1"], [raw]).tests == [{"input": "1\n", "output": "\ufffd7\n"}]


def test_every_failing_solution_is_named_in_the_reason():
    suite = build_suite(
        ["1"], [Solution("raise SystemExit(3)"), Solution(ECHO), Solution("raise SystemExit(4)")]
    )
    (entry,) = suite.rejected
    parts = entry["reason"].split("; ")
    assert [p.split(" (")[0] for p in parts] == ["solution 0: runtime_error", "solution 2: runtime_error"]
    assert "exit 3" in parts[0] and "exit 4" in parts[1]


@pytest.mark.parametrize(
    "solutions",
    [
        [Solution(ECHO), Solution(ABS)],
        [Solution(ABS), Solution(ECHO)],  # the first one may be the wrong one
    ],
)
def test_every_reference_must_agree(solutions):
    suite = build_suite(["4", "-4"], solutions)
    assert suite.tests == [{"input": "4\n", "output": "4\n"}]
    assert suite.rejected == [
        {"input": "-4\n", "reason": "reference solutions disagree (2 distinct outputs)"}
    ]


def test_the_tolerance_decides_when_numbers_agree():
    close = [Solution("print(1.0)"), Solution("print(1.05)")]
    assert build_suite(["1"], close, tolerance=0.1).tests == [{"input": "1\n", "output": "1.0\n"}]
    suite = build_suite(["1"], close)  # the default 1e-6
    assert suite.rejected == [{"input": "1\n", "reason": "reference solutions disagree (2 distinct outputs)"}]
