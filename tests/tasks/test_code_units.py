"""The code-task steps one at a time, without a Prefect flow: the plan, a problem's row, the suite check
in the process sandbox (problems written here, so each reason is known), model-proposed tests against a
recording endpoint, and the reference check's limits. The flow tests (test_code.py) run them together."""

from __future__ import annotations

import json
import random

import polars as pl
import pytest

import flows.data.code_problems as code_problems
from flows.config import CodeTasksConfig
from flows.data.code_problems import FAMILIES, Problem, problem
from flows.errors import ConfigError
from flows.runner import ROW
from flows.schema import ITEM_COLUMNS
from flows.tasks import code, suites
from flows.tasks.code import ReferenceCheck, Spec, Suites, Testgen, plan
from flows.tasks.suites import check, extra_tests, limits_for, solutions, stdin_of
from sandboxes import Limits
from verifiers.endpoint import EndpointError, EndpointUnavailable

LIMITS = limits_for(2.0, 256)


def stdio(code_: str, inputs: list, alternatives: tuple[str, ...] = ()) -> Problem:
    return Problem("mine", 1, "stdio", 7, "Print it.", code_, inputs, {}, None, alternatives)


def function(code_: str, inputs: list, fn: str = "f") -> Problem:
    return Problem("mine", 1, "function", 7, "Write f.", code_, inputs, {}, fn, ())


# -- the plan -----------------------------------------------------------------------------------------


def test_the_plan_deals_problems_round_robin_over_the_named_families():
    cfg = CodeTasksConfig(n_problems=5, families=["collatz", "coin_ways", "collatz"], seed=3)
    assert plan(cfg) == [
        Spec("collatz", 3_000_000, 0), Spec("coin_ways", 3_000_000, 1), Spec("collatz", 3_000_001, 2),
        Spec("coin_ways", 3_000_001, 3), Spec("collatz", 3_000_002, 4),
    ]  # fmt: skip


def test_every_family_in_a_seeded_order_when_none_are_named():
    first = [s.family for s in plan(CodeTasksConfig(n_problems=len(FAMILIES), seed=0))]
    assert sorted(first) == sorted(FAMILIES)
    expected = sorted(FAMILIES)
    random.Random("families/0").shuffle(expected)
    assert first == expected
    other = [s.family for s in plan(CodeTasksConfig(n_problems=len(FAMILIES), seed=1))]
    assert other != first and sorted(other) == sorted(first)


def test_bad_family_lists_say_what_is_wrong():
    with pytest.raises(
        ConfigError, match="^code.families is empty: name families, or set code.enabled = false$"
    ):
        plan(CodeTasksConfig(families=[]))
    with pytest.raises(ConfigError, match=r"^code.families: unknown family nope \(known: caesar_shift, "):
        plan(CodeTasksConfig(families=["collatz", "nope"]))
    with pytest.raises(ConfigError, match=r"^code.families: unknown families nope, nada \(known: "):
        plan(CodeTasksConfig(families=["nope", "nada"]))


# -- a problem's row and the test-suites step ---------------------------------------------------------


def test_a_problems_row_holds_its_item_and_checked_suite():
    cfg = CodeTasksConfig(tests_per_problem=3, time_limit_s=1.5, memory_mb=300)
    row = code._row(Spec("caesar_shift", 11, 4), cfg)
    p = problem("caesar_shift", 11, 3)
    meta = json.loads(row.pop("metadata"))
    assert row == {
        "id": "caesar_shift-s11", "source": "code_problems", "domain": "code", "task": "caesar_shift", ROW: 4,
        "prompt": p.statement, "reference": p.reference, "reason": None,
    }  # fmt: skip
    assert meta == {
        "tests": check(p, limits_for(1.5, 300)).tests, "difficulty": p.difficulty, "family": "caesar_shift",
        "style": "stdio", "seed": 11, "params": p.params, "language": "python", "time_limit_s": 1.5,
        "memory_mb": 300,
    }  # fmt: skip
    assert len(meta["tests"]) == 3 and "fn_name" not in meta


def test_a_function_problem_records_its_function_name():
    row = code._row(Spec("collatz", 0, 0), CodeTasksConfig(tests_per_problem=2))
    assert json.loads(row["metadata"])["fn_name"] == problem("collatz", 0, 2).fn_name


def broken_family(monkeypatch, name: str) -> None:
    real = code_problems.problem

    def draw(family, seed, n):
        if family == name:
            raise RuntimeError("boom")
        return real(family, seed, n)

    monkeypatch.setattr(code_problems, "problem", draw)
    monkeypatch.setattr(code, "problem", draw, raising=False)


def test_a_family_that_fails_quarantines_its_problem_only(monkeypatch):
    broken_family(monkeypatch, "collatz")
    cfg = CodeTasksConfig(tests_per_problem=2, workers=2)
    assert code._row(Spec("collatz", 5, 1), cfg) == {
        "id": "collatz-s5", "source": "code_problems", "domain": "code", "task": "collatz", ROW: 1,
        "prompt": "", "reference": "", "metadata": "{}", "reason": "family failed: RuntimeError('boom')",
    }  # fmt: skip
    res = Suites(cfg, "hash").run([Spec("caesar_shift", 0, 0), Spec("collatz", 0, 1)])
    assert res.kept.columns == [*ITEM_COLUMNS, ROW]
    assert res.kept["id"].to_list() == ["caesar_shift-s0"] and res.kept[ROW].to_list() == [0]
    assert res.removed["id"].to_list() == ["collatz-s0"]
    assert res.removed["reason"].to_list() == ["family failed: RuntimeError('boom')"]
    c = res.count
    assert (c.step, c.rows_in, c.rows_out) == ("test-suites", 2, 1)


# -- suites --------------------------------------------------------------------------------------------


def test_limits_are_the_code_verifiers():
    assert limits_for(2.0, 256) == Limits(cpu_s=2.0, wall_s=5.0, memory_mb=256)
    assert limits_for(0.5, 64) == Limits(cpu_s=0.5, wall_s=2.0, memory_mb=64)


def test_a_function_problem_runs_as_a_program_reading_its_call():
    p = function("def f(a, b=0):\n    return [a + b]\n", [{"args": [1], "kwargs": {"b": 2}}, {"args": [5]}])
    assert stdin_of(p, {"args": [5]}) == '{"args": [5]}'
    assert stdin_of(stdio("print(1)", []), 5) == "5"
    (program,) = solutions(p)
    assert program.code.startswith(p.code) and 'f(*_spec["args"]' in program.code
    assert check(p, LIMITS).tests == [
        {"args": [1], "kwargs": {"b": 2}, "expected": [3]},
        {"args": [5], "kwargs": {}, "expected": [5]},
    ]


def test_a_suite_whose_tests_all_expect_one_output_is_weak():
    p = stdio("input()\nprint(1)", ["a", "b"])
    assert check(p, LIMITS).error == "weak suite: every test expects the same output"
    spaced = stdio("s = input()\nprint(1, end=' \\n' if s == 'a' else '\\n')", ["a", "b"])
    assert check(spaced, LIMITS).error == "weak suite: every test expects the same output"
    assert check(stdio("print(len(input()))", ["a", "bb"]), LIMITS) == suites.Checked(
        [{"input": "a\n", "output": "1\n"}, {"input": "bb\n", "output": "2\n"}]
    )


def test_the_first_bad_input_is_named_shortened():
    crash = "s = input()\nif s.startswith('x'):\n    raise SystemExit(3)\nprint(len(s))"
    long = "x" * 70
    err = check(stdio(crash, ["ab", long, "xy", "abc"]), LIMITS).error
    assert err.startswith(f"bad test input {'x' * 60 + '...'!r}: solution 0: ")
    exactly = "x" * 59  # with its newline, 60 characters: shown whole
    err = check(stdio(crash, [exactly, "xy"]), LIMITS).error
    assert err.startswith(f"bad test input {exactly + chr(10)!r}: solution 0: ")


def test_a_solution_that_does_not_build_is_named():
    p = stdio("print(len(input()))", ["a", "bb"], alternatives=("print(len(input())", "print(len(input()))"))
    assert check(p, LIMITS).error.startswith("solution 1 does not build: SyntaxError: ")


class Proposer:
    """An endpoint that proposes fixed inputs and records what it was asked."""

    def __init__(self, inputs: list) -> None:
        self.inputs, self.asked = inputs, []

    def chat(self, prompts, **kw):
        self.asked.append(prompts[0])
        return [[json.dumps({"inputs": self.inputs})]]


def test_extra_tests_come_from_proposed_inputs_the_solutions_agree_on():
    p = function("def f(a):\n    return 10 // a\n", [], fn="f")
    endpoint = Proposer([{"args": [2]}, {"args": [0]}, {"args": [5]}, {"args": [1]}])
    tests, proposed = extra_tests(p, endpoint, 3, LIMITS)
    assert proposed == 3  # the first three: as many as asked for
    assert tests == [{"args": [2], "kwargs": {}, "expected": 5}, {"args": [5], "kwargs": {}, "expected": 2}]
    (asked,) = endpoint.asked
    assert asked.startswith("Problem:\nWrite f.\n\nEach test input is one JSON object")
    assert "one call of `f`." in asked and asked.endswith("Write 3 test inputs.")
    plain = Proposer(["4", "abc"])
    tests, proposed = extra_tests(stdio("print(len(input()))", []), plain, 5, LIMITS)
    assert (tests, proposed) == ([{"input": "4\n", "output": "1\n"}, {"input": "abc\n", "output": "3\n"}], 2)
    assert plain.asked == ["Problem:\nPrint it.\n\nWrite 5 test inputs."]


# -- testgen and the reference check -----------------------------------------------------------------


def rows_of(*specs: Spec, cfg: CodeTasksConfig) -> pl.DataFrame:
    return pl.DataFrame([code._row(s, cfg) for s in specs]).drop("reason")


def test_testgen_adds_the_new_tests_and_says_why_a_reply_was_unusable(monkeypatch):
    cfg = CodeTasksConfig(tests_per_problem=2, testgen={"url": "http://127.0.0.1:9/v1"}, testgen_inputs=4)
    rows = rows_of(Spec("collatz", 0, 0), Spec("caesar_shift", 1, 1), cfg=cfg)
    # metadata as another writer may leave it: each test's keys in reverse order, not sorted
    meta = json.loads(rows["metadata"][0])
    meta["tests"] = [{k: t[k] for k in reversed(t)} for t in meta["tests"]]
    rows = rows.with_columns(pl.Series("metadata", [json.dumps(meta), rows["metadata"][1]]))
    known = json.loads(rows["metadata"][0])["tests"][0]
    asked = []

    def fake(p, endpoint, n, limits):
        asked.append((p.family, p.seed, len(p.inputs), n, limits, endpoint.url))
        if p.family == "caesar_shift":
            raise EndpointError("model reply is not JSON")
        reordered = {k: known[k] for k in sorted(known)}  # the same test, its keys in another order
        return [reordered, {"args": [99], "kwargs": {}, "expected": 25}], 6

    monkeypatch.setattr(suites, "extra_tests", fake)
    monkeypatch.setattr(code, "extra_tests", fake, raising=False)
    res = Testgen(cfg).run(rows)
    assert sorted(asked) == [
        ("caesar_shift", 1, 2, 4, limits_for(2.0, 512), "http://127.0.0.1:9/v1"),
        ("collatz", 0, 2, 4, limits_for(2.0, 512), "http://127.0.0.1:9/v1"),
    ]
    first, second = (json.loads(m) for m in res.kept["metadata"])
    before = json.loads(rows["metadata"][0])
    assert first == before | {
        "tests": [*before["tests"], {"args": [99], "kwargs": {}, "expected": 25}],
        "testgen": {"proposed": 6, "added": 1},
    }
    assert second == json.loads(rows["metadata"][1]) | {"testgen_error": "model reply is not JSON"}
    assert res.kept.drop("metadata").equals(rows.drop("metadata")) and res.removed.height == 0
    c = res.count
    assert (c.step, c.rows_in, c.rows_out) == ("testgen", 2, 2)
    assert c.reason == "tests added from inputs proposed by http://127.0.0.1:9/v1, where the solutions agree"


def test_testgen_fails_when_the_endpoint_is_down(monkeypatch):
    cfg = CodeTasksConfig(tests_per_problem=2, testgen={"url": "http://127.0.0.1:9/v1"})

    def down(*args):
        raise EndpointUnavailable("connection refused")

    monkeypatch.setattr(suites, "extra_tests", down)
    monkeypatch.setattr(code, "extra_tests", down, raising=False)
    with pytest.raises(EndpointUnavailable):
        Testgen(cfg).run(rows_of(Spec("collatz", 0, 0), cfg=cfg))


def test_the_reference_check_runs_the_code_verifier_within_the_configured_limits():
    cfg = CodeTasksConfig(tests_per_problem=2, memory_mb=64, time_limit_s=2.0, workers=1)
    rows = rows_of(Spec("caesar_shift", 0, 0), Spec("caesar_shift", 1, 1), cfg=cfg)
    hungry = rows["reference"][1].replace("```python\n", "```python\n_block = bytearray(300 * 2**20)\n", 1)
    # an item's own limits win; without them, the step's configured ones apply
    unlimited = json.dumps({k: v for k, v in json.loads(rows["metadata"][1]).items() if k != "memory_mb"})
    rows = rows.with_columns(
        pl.Series("reference", [rows["reference"][0], hungry]),
        pl.Series("metadata", [rows["metadata"][0], unlimited]),
    )
    res = ReferenceCheck(cfg).run(rows)
    assert res.kept["id"].to_list() == ["caesar_shift-s0"]
    assert res.removed["reason"].to_list() == ["reference scores 0 with the code verifier: MLE"]
    c = res.count
    assert (c.step, c.rows_in, c.rows_out, c.reason) == (
        "reference-check",
        2,
        1,
        "the code verifier scores each reference 1",
    )
    roomy = CodeTasksConfig(tests_per_problem=2, memory_mb=1024, workers=1)
    assert ReferenceCheck(roomy).run(rows).kept.height == 2  # the same reference, with room
