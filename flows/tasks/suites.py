"""Test suites of generated problems, checked in the sandbox: expected outputs come from running the
reference (and its independent alternatives) on every proposed input, never from a written value.

Both styles go through `verifiers.testgen.build_suite`, the project's one "run the references, keep
the inputs they agree on" runner: a function-style problem runs as a small program that reads the call
``{"args": [...], "kwargs": {...}}`` as JSON on stdin and prints the JSON of the result, so its
expected value is the reference's own return value after a JSON round trip (what the `code` verifier's
harness compares against).

Not a flow: the code-tasks flow's test suites, kept beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flows.data.code_problems import Problem
from sandboxes import Limits
from verifiers.testgen import Solution, Suite, build_suite, generate_suite

_CALL = (
    "\n\nimport json as _json, sys as _sys\n"
    "_spec = _json.loads(_sys.stdin.read())\n"
    '_sys.stdout.write(_json.dumps({fn}(*_spec["args"], **_spec.get("kwargs", {{}}))))\n'
)
_FUNCTION_INPUTS = (
    '\n\nEach test input is one JSON object {{"args": [...], "kwargs": {{}}}} holding the arguments of '
    "one call of `{fn}`."
)


def limits_for(time_limit_s: float, memory_mb: int) -> Limits:
    """The limits the `code` verifier applies to one test (verifiers/code.py `_limits`)."""
    return Limits(cpu_s=time_limit_s, wall_s=time_limit_s * 2 + 1, memory_mb=memory_mb)


def solutions(p: Problem) -> list[Solution]:
    """The reference first, then its alternatives, as stdin programs."""
    codes = [p.code, *p.alternatives]
    if p.style == "function":
        codes = [code + _CALL.format(fn=p.fn_name) for code in codes]
    return [Solution(code) for code in codes]


def stdin_of(p: Problem, test_input: Any) -> str:
    return json.dumps(test_input) if p.style == "function" else str(test_input)


def as_tests(p: Problem, suite: Suite) -> list[dict[str, Any]]:
    """Suite rows as the `code` verifier reads them."""
    if p.style == "stdio":
        return [{"input": t["input"], "output": t["output"]} for t in suite.tests]
    out = []
    for t in suite.tests:
        call = json.loads(t["input"])
        out.append(
            {"args": call["args"], "kwargs": call.get("kwargs", {}), "expected": json.loads(t["output"])}
        )
    return out


def _excerpt(text: str, size: int = 60) -> str:
    return repr(text if len(text) <= size else text[:size] + "...")


@dataclass
class Checked:
    """A problem's suite, or why it has none (the problem then goes to quarantine)."""

    tests: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    extra: dict[str, int] = field(default_factory=dict)  # testgen: proposed / kept


def check(p: Problem, limits: Limits) -> Checked:
    """Run every solution on every proposed input. The family's own inputs must all be valid, so any
    rejected input (a crash, a timeout, solutions that disagree) rejects the problem; a suite whose
    tests all expect one output is rejected too, as a program printing a constant would pass it."""
    suite = build_suite([stdin_of(p, i) for i in p.inputs], solutions(p), limits=limits)
    if suite.broken_solutions:
        b = suite.broken_solutions[0]
        return Checked(error=f"solution {b['solution']} does not build: {b['error']}")
    if suite.rejected:
        bad = suite.rejected[0]
        return Checked(error=f"bad test input {_excerpt(bad['input'])}: {bad['reason']}")
    if len({" ".join(t["output"].split()) for t in suite.tests}) < 2:
        return Checked(error="weak suite: every test expects the same output")
    return Checked(as_tests(p, suite))


def extra_tests(p: Problem, endpoint, n_inputs: int, limits: Limits) -> tuple[list[dict[str, Any]], int]:
    """Tests from inputs a model proposes (verifiers/testgen.py), kept where the solutions agree;
    returns (tests, inputs proposed). Raises EndpointError when the endpoint cannot be used."""
    problem = p.statement + (_FUNCTION_INPUTS.format(fn=p.fn_name) if p.style == "function" else "")
    suite = generate_suite(problem, solutions(p), endpoint=endpoint, n_inputs=n_inputs, limits=limits)
    return as_tests(p, suite), suite.proposed
