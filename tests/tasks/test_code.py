"""`{run}-code`: families, sandbox-checked suites, the written items scored by the `code` verifier."""

from __future__ import annotations

import json
from collections import Counter

import polars as pl
import pytest

from flows.data.code_problems import FAMILIES, Draft, Family, Problem, call, problem
from flows.errors import ConfigError
from flows.store import DatasetStore
from flows.tasks.suites import check, limits_for
from tests.tasks.conftest import small_config

LIMITS = limits_for(2.0, 512)


def test_families_are_many_seeded_and_in_both_styles():
    assert len(FAMILIES) >= 30
    styles = Counter(f.style for f in FAMILIES.values())
    assert styles["stdio"] >= 10 and styles["function"] >= 10
    assert {f.difficulty for f in FAMILIES.values()} == {1, 2, 3}
    for name in FAMILIES:
        a, b = problem(name, 0, 5), problem(name, 0, 5)
        assert a == b and len(a.inputs) == 5, name
        assert a.reference.startswith("```python\n") and a.reference.endswith("\n```")
        assert ("```python" in a.statement) and (a.fn_name is None) == (a.style == "stdio")
    # seeds vary the constants or the wording
    varied = sum(problem(n, 0, 5).statement != problem(n, 1, 5).statement for n in FAMILIES)
    assert varied >= len(FAMILIES) - 3


def _problem(
    code: str, inputs: list, alternatives: tuple[str, ...] = (), fn_name: str | None = None
) -> Problem:
    return Problem(
        "t", 1, "function" if fn_name else "stdio", 0, "s", code, inputs, {}, fn_name, alternatives
    )


def test_suite_outputs_come_from_running_the_reference():
    doubled = check(_problem("print(2 * int(input()))", ["1\n", "5\n"]), LIMITS)
    assert doubled.error is None and doubled.tests == [
        {"input": "1\n", "output": "2\n"},
        {"input": "5\n", "output": "10\n"},
    ]
    calls = check(
        _problem("def f(xs):\n    return sorted(xs)", [call([3, 1]), call([2])], fn_name="f"), LIMITS
    )
    assert calls.tests == [
        {"args": [[3, 1]], "kwargs": {}, "expected": [1, 3]},
        {"args": [[2]], "kwargs": {}, "expected": [2]},
    ]


@pytest.mark.parametrize(
    ("code", "alternatives", "inputs", "error"),
    [
        (
            "print(int(input()) // 1)",
            ("print(int(input()) + 1)",),
            ["1\n", "2\n"],
            "bad test input '1\\n': reference solutions disagree",
        ),
        (
            "print(1 // int(input()))",
            (),
            ["1\n", "0\n"],
            "bad test input '0\\n': solution 0: runtime_error (exit 1",
        ),
        ("print(len(input()) % 1)", (), ["ab\n", "abc\n"], "weak suite: every test expects the same output"),
        ("print(", (), ["1\n", "2\n"], "solution 0 does not build: SyntaxError"),
    ],
)
def test_a_problem_whose_suite_cannot_be_trusted_is_rejected(code, alternatives, inputs, error):
    assert check(_problem(code, inputs, alternatives), LIMITS).error.startswith(error)


def test_unknown_family_is_a_one_line_config_error():
    from flows.tasks.code import plan

    cfg = small_config("/nonexistent").code.model_copy(update={"families": ["fizzbuzz", "fizbuzz"]})
    with pytest.raises(ConfigError, match="code.families: unknown family fizbuzz"):
        plan(cfg)


def _wrong(row: dict, meta: dict) -> str:
    """A program returning the first test's answer on every test: a suite must tell it apart."""
    first = meta["tests"][0]
    if "fn_name" in meta:
        return f"```python\ndef {meta['fn_name']}(*args, **kwargs):\n    return {first['expected']!r}\n```"
    return f"```python\nimport sys\nsys.stdout.write({first['output']!r})\n```"


def test_flow_writes_every_family_with_references_the_code_verifier_accepts(
    prefect_harness, home, monkeypatch
):
    from prefect.artifacts import Artifact

    from flows.tasks.code import code_tasks
    from verifiers.code import CodeVerifier

    def disagree(rng, n_tests):  # a family whose brute force disagrees with its reference
        return Draft(
            "Print n.", "print(int(input()))", ["1\n", "2\n"], alternatives=("print(-int(input()))",)
        )

    monkeypatch.setitem(FAMILIES, "broken", Family("broken", 1, "stdio", "disagrees", disagree))
    names = sorted(FAMILIES)
    cfg = small_config(home, code={"families": names, "n_problems": len(names), "tests_per_problem": 3})
    out = code_tasks(cfg)
    store = DatasetStore(home)
    df = store.read("t-code")
    assert sorted(df["task"]) == sorted(set(names) - {"broken"})
    quarantine = store.quarantine("t-code")
    assert quarantine["id"].to_list() == ["broken-s0"]
    assert (
        quarantine["reason"][0] == "bad test input '1\\n': reference solutions disagree (2 distinct outputs)"
    )
    assert [s["step"] for s in out["manifest"]["steps"]] == [
        "test-suites",
        "schema",
        "reference-check",
        "exact-dedup",
    ]

    rows = df.to_dicts()
    metas = [json.loads(r["metadata"]) for r in rows]
    assert {m["style"] for m in metas} == {"stdio", "function"}
    assert all(len(m["tests"]) >= 2 and m["difficulty"] in (1, 2, 3) for m in metas)
    verifier = CodeVerifier(workers=2)
    assert [r.reward for r in verifier.verify([{**r, "response": r["reference"]} for r in rows])] == [
        1.0
    ] * len(rows)
    wrong = verifier.verify([{**r, "response": _wrong(r, m)} for r, m in zip(rows, metas, strict=True)])
    assert [r.reward for r in wrong] == [0.0] * len(rows)

    assert (
        Artifact.get("t-code-tasks-mixture") is not None and Artifact.get("t-code-tasks-progress") is not None
    )
    again = code_tasks(cfg)  # same inputs: nothing runs, the recorded result comes back
    assert again["reused"] and again["tasks"] == [] and again["manifest"] == out["manifest"]
    (home / "datasets" / "t-code" / "BUILT_FROM.json").unlink()  # forgotten: the steps run, from cache
    rerun = code_tasks(cfg)
    assert {state for _, state in rerun["tasks"]} == {"Cached"}
    assert store.versions("t-code") == [1] and store.read("t-code").equals(df)  # same content, same version


def test_testgen_endpoint_adds_checked_tests(prefect_harness, home, openai_server):
    from flows.tasks.code import code_tasks

    def model(body: dict) -> list[str]:
        prompt = body["messages"][-1]["content"]
        if "JSON object" in prompt:  # function style: calls of count_primes
            inputs = [json.dumps(call(n)) for n in (10, 100, 2000)] + ['{"args": ["ten"]}']
        else:  # stdin of sum_above: two valid lists and one that is not a list
            inputs = ["3\n5 60 -7\n", "2\n100 100\n", "not numbers\n"]
        return [json.dumps({"inputs": inputs})]

    url, seen = openai_server(model)
    cfg = small_config(
        home,
        code={
            "families": ["sum_above", "count_primes"],
            "n_problems": 2,
            "tests_per_problem": 3,
            "testgen": {"url": url},
        },
    )
    out = code_tasks(cfg)
    assert len(seen) == 2
    df = DatasetStore(home).read("t-code")
    meta = {r["task"]: json.loads(r["metadata"]) for r in df.to_dicts()}
    assert meta["sum_above"]["testgen"] == {"proposed": 3, "added": 2}
    assert meta["count_primes"]["testgen"] == {"proposed": 4, "added": 3}
    assert {"args": [2000], "kwargs": {}, "expected": 303} in meta["count_primes"]["tests"]
    assert len(meta["sum_above"]["tests"]) == 5
    steps = {s["step"]: s for s in out["manifest"]["steps"]}
    assert steps["testgen"]["reason"].startswith("tests added from inputs proposed by http")
    assert steps["reference-check"]["rows_out"] == 2
    assert "testgen: 5 tests added of 7 inputs proposed; 0 problems without a usable reply" in out["notes"]


def test_code_items_do_not_depend_on_the_runs_logic_items(prefect_harness, home):
    """A copy of a logic item stays in {run}-code: the curriculum reading both leaves it out
    (tests/rl/test_overlaps.py), so the code dataset is the same whether the logic one exists or not."""
    from flows.schema import ITEM_COLUMNS
    from flows.tasks.code import code_tasks

    cfg = small_config(home, code={"families": ["fizzbuzz", "to_base"], "n_problems": 2})
    code_tasks(cfg.model_copy(update={"name": "alone"}))
    copied = problem("to_base", 0, 4).statement
    logic = {
        "id": "lg-1",
        "source": "x",
        "domain": "logic",
        "task": "x",
        "prompt": copied,
        "reference": "",
        "metadata": "{}",
    }
    DatasetStore(home).write("t-synlogic", pl.DataFrame([logic], schema=ITEM_COLUMNS))
    out = code_tasks(cfg)
    assert DatasetStore(home).quarantine("t-code") is None
    assert out["manifest"]["parents"] == [] and out["manifest"]["rows"] == 2
    assert DatasetStore(home).read("t-code").equals(DatasetStore(home).read("alone-code"))
