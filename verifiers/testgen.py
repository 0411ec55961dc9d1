"""Test-suite generation for coding problems that come without tests.

A model (any OpenAI-compatible chat-completions endpoint: vLLM, SGLang, `m1 serve model`, a hosted API)
proposes test *inputs* only; it is never trusted with outputs. Every reference solution runs on every
input in the sandbox, and an input is kept only when all reference solutions finish normally and agree
on the output (compared as the code verifier compares). Disagreement means an input outside the
problem's constraints or a wrong reference, and either way the input cannot be a test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sandboxes import LANGUAGES, Limits, get_sandbox
from verifiers.code import outputs_match
from verifiers.endpoint import Endpoint, EndpointError

SYSTEM_PROMPT = (
    "You write test inputs for competitive-programming problems. Reply with a JSON object "
    '{"inputs": [...]} whose items are complete standard-input texts that satisfy every constraint of '
    "the problem. Cover edge cases (smallest and largest sizes, equal and extreme values) and a few "
    "random cases. Do not include expected outputs."
)
MAX_INPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class Solution:
    code: str
    language: str = "python"


def solutions_of(row: dict[str, Any]) -> list[Solution]:
    """A problem's reference solutions: ``solutions`` as code strings or ``{code, language}`` objects."""
    raw = row.get("solutions")
    if not isinstance(raw, list):
        return []
    found = [{"code": s} if isinstance(s, str) else s for s in raw]
    return [
        Solution(s["code"], str(s.get("language", "python")))
        for s in found
        if isinstance(s, dict) and isinstance(s.get("code"), str)
    ]


@dataclass
class Suite:
    tests: list[dict[str, str]] = field(default_factory=list)  # {"input", "output"}
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {"input", "reason"}
    broken_solutions: list[dict[str, Any]] = field(default_factory=list)  # failed to build
    proposed: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "proposed": self.proposed,
            "kept": len(self.tests),
            "rejected": len(self.rejected),
            "broken_solutions": len(self.broken_solutions),
        }


def _inputs_from_reply(content: str) -> list[str]:
    """The ``inputs`` list from a reply; tolerates a fenced JSON block around it."""
    fenced = re.search(r"```(?:json)?\s*\n(.*?)```", content, re.DOTALL)
    text = fenced.group(1) if fenced else content
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EndpointError(f"model reply is not JSON: {exc.msg}") from None
    inputs = data.get("inputs") if isinstance(data, dict) else data
    if not isinstance(inputs, list):
        raise EndpointError('model reply has no "inputs" list')
    return [str(x) if isinstance(x, str) else json.dumps(x) for x in inputs]


def request_inputs(
    endpoint: Endpoint, problem: str, *, n_inputs: int = 10, temperature: float = 0.7
) -> list[str]:
    """Ask the endpoint for up to `n_inputs` test inputs for `problem` (chat completions API)."""
    ((content,),) = endpoint.chat(
        [f"Problem:\n{problem}\n\nWrite {n_inputs} test inputs."],
        system=SYSTEM_PROMPT,
        temperature=temperature,
        response_format={"type": "json_object"},
    )
    return _inputs_from_reply(content)[:n_inputs]


def build_suite(
    inputs: Sequence[str],
    solutions: Sequence[Solution],
    *,
    backend: str = "process",
    limits: Limits | None = None,
    tolerance: float = 1e-6,
) -> Suite:
    """Run every solution on every input; keep the inputs on which all working solutions agree.

    A solution that does not build is reported in `broken_solutions` and has no vote."""
    limits = limits or Limits(cpu_s=2.0, wall_s=5.0, memory_mb=512)
    suite = Suite(proposed=len(inputs))
    unique = list(dict.fromkeys(i if i.endswith("\n") else i + "\n" for i in inputs))
    oversized = [i for i in unique if len(i.encode()) > MAX_INPUT_BYTES]
    suite.rejected += [{"input": i[:200] + "...", "reason": "input over 1 MiB"} for i in oversized]
    unique = [i for i in unique if i not in oversized]

    sandbox = get_sandbox(backend)
    # outputs[k][j]: solution k on input j, or the reason it produced none
    outputs: list[list[str | None]] = []
    reasons: list[list[str]] = []
    for k, solution in enumerate(solutions):
        if solution.language not in LANGUAGES or not sandbox.supports(solution.language):
            suite.broken_solutions.append(
                {"solution": k, "error": f"language {solution.language!r} unavailable"}
            )
            continue
        if solution.language == "python":
            try:
                compile(solution.code, "main.py", "exec")  # parse only: a syntax error is a broken build
            except (SyntaxError, ValueError) as exc:
                suite.broken_solutions.append({"solution": k, "error": f"{type(exc).__name__}: {exc}"})
                continue
        with sandbox.program(solution.language, solution.code) as program:
            if not program.built:
                assert program.compile_result is not None
                err = program.compile_result.stderr.decode("utf-8", "replace")[:300]
                suite.broken_solutions.append({"solution": k, "error": err})
                continue
            outs: list[str | None] = []
            why: list[str] = []
            for text in unique:
                run = program.run(stdin=text.encode(), limits=limits)
                outs.append(run.stdout.decode("utf-8", "replace") if run.ok else None)
                why.append("" if run.ok else f"solution {k}: {run.describe()}")
            outputs.append(outs)
            reasons.append(why)
    if not outputs:
        suite.rejected += [{"input": i, "reason": "no reference solution builds"} for i in unique]
        return suite

    for j, text in enumerate(unique):
        column = [outs[j] for outs in outputs]
        failed = [reasons[k][j] for k, out in enumerate(column) if out is None]
        if failed:
            suite.rejected.append({"input": text, "reason": "; ".join(failed)})
        elif all(outputs_match(out, column[0], tolerance) for out in column[1:]):  # type: ignore[arg-type]
            suite.tests.append({"input": text, "output": column[0]})  # type: ignore[dict-item]
        else:
            distinct = len({" ".join(out.split()) for out in column if out is not None})
            suite.rejected.append(
                {"input": text, "reason": f"reference solutions disagree ({distinct} distinct outputs)"}
            )
    return suite


def generate_suite(
    problem: str,
    solutions: Sequence[Solution],
    *,
    endpoint: str | Endpoint,
    model: str = "default",
    api_key: str | None = None,
    n_inputs: int = 10,
    backend: str = "process",
    limits: Limits | None = None,
    timeout_s: float = 120.0,
) -> Suite:
    """Ask `endpoint` (base URL ending in /v1, or an Endpoint) for inputs, then keep those the solutions
    agree on. Raises EndpointError when the endpoint cannot be used."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(url=endpoint, model=model, api_key=api_key, timeout_s=timeout_s, retries=2)
    inputs = request_inputs(endpoint, problem, n_inputs=n_inputs)
    return build_suite(inputs, solutions, backend=backend, limits=limits)
