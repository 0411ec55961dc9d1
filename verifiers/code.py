"""Code verifier (competitive programming): run the candidate program on test cases in the sandbox.

An item has ``response`` (the program, usually in a fenced code block after the reasoning) and
``tests`` (a list, or a JSON string, at the top level or in ``metadata``):

- stdin/stdout style: ``{"input": "1 2\\n", "output": "3\\n"}``; outputs are compared token by token,
  numbers with a relative/absolute tolerance (the usual checker of judges);
- function-call style (Python, LeetCode/TACO ``fn_name``): ``{"args": [...], "kwargs": {...},
  "expected": value}`` with ``fn_name`` on the item; a harness calls ``fn_name`` (or
  ``Solution().fn_name``) and prints the JSON result; the expected value never enters the sandbox.

Without ``tests``, an item may carry its tests as programs, as the public Python sets publish them
(verifiers/code_programs.py): HumanEval (``test`` defining ``check(candidate)``, plus ``entry_point``),
MBPP (``test_list`` of assert lines, optional ``test_imports`` and ``test_setup_code``) or pytest
(``test`` holding ``test_*`` functions that import from ``solution``); a verdict per assert or test.

Optional item fields: ``language`` (``python`` | ``cpp``; else the code fence's tag), ``time_limit_s``,
``memory_mb``. Like ``tests``, ``fn_name`` and these options may sit in ``metadata`` (canonical items).
Verdict per test: AC, WA, TLE, MLE, RE, OLE (output limit), CE (compilation, or a Python syntax error).
Reward = 1 if all pass, else 0; or the fraction passed with ``partial_credit``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from sandboxes import LANGUAGES, Limits, RunResult, SandboxUnavailable, get_sandbox
from verifiers.base import ItemError, Reward, item_field
from verifiers.code_programs import ProgramTests, program_tests, require_pytest, run_tests
from verifiers.format import final_section, think_ok

Verdict = Literal["AC", "WA", "TLE", "MLE", "RE", "OLE", "CE"]

# the info string after the tag is bounded: a megabyte line of ``` would otherwise be rescanned per fence
_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]{0,200}\n(.*?)```", re.DOTALL)
_LANG_TAGS = {
    "python": "python",
    "py": "python",
    "python3": "python",
    "cpp": "cpp",
    "c++": "cpp",
    "cc": "cpp",
}
_STATUS_VERDICT: dict[str, Verdict] = {
    "timeout": "TLE",
    "memory": "MLE",
    "runtime_error": "RE",
    "killed": "RE",
    "output_limit": "OLE",
    "compile_error": "CE",
}
_RESULT_MARK = "\x1e__m1_result__"
# Function-call harness: the candidate's code is solution.py; the arguments come on stdin as JSON.
_HARNESS = f"""import json, sys
import solution
spec = json.loads(sys.stdin.read())
target = getattr(solution, spec["fn_name"], None)
if target is None and hasattr(solution, "Solution"):
    target = getattr(solution.Solution(), spec["fn_name"])
if target is None:
    raise SystemExit("no function named " + spec["fn_name"])
result = target(*spec["args"], **spec["kwargs"])
sys.stdout.write("\\n{_RESULT_MARK}" + json.dumps(result) + "\\n")
"""
_EXCERPT = 200


def extract_code(response: str, language: str | None) -> tuple[str, str]:
    """(code, language) from the last fenced block of the requested language, or of any language when
    none is requested; a response with no fence is taken as code as a whole."""
    text = final_section(response)
    blocks = [(_LANG_TAGS.get(tag.lower(), tag.lower()), body) for tag, body in _FENCE.findall(text)]
    if language is not None:
        tagged = [b for b in blocks if b[0] == language] or [b for b in blocks if not b[0]]
        if tagged:
            return tagged[-1][1], language
    elif blocks:
        tag, body = blocks[-1]
        return body, tag or "python"
    if blocks:
        raise ItemError(f"no {language} code block in the response")
    if not text.strip():
        raise ItemError("empty response")
    return text, language or "python"


def tests_of(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tests = item_field(item, "tests")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, Mapping) for t in tests):
        raise ItemError("item needs `tests`: a non-empty list of test objects")
    return tests


def _close(got: str, want: str, tolerance: float) -> bool:
    if got == want:
        return True
    try:
        a, b = float(got), float(want)
    except ValueError:
        return False
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= tolerance * max(1.0, abs(b))


def outputs_match(got: str, want: str, tolerance: float = 1e-6) -> bool:
    """Token-wise comparison, blind to whitespace layout; numbers within `tolerance` (relative above 1)."""
    got_tokens, want_tokens = got.split(), want.split()
    return len(got_tokens) == len(want_tokens) and all(
        _close(g, w, tolerance) for g, w in zip(got_tokens, want_tokens, strict=True)
    )


def values_match(got: Any, want: Any, tolerance: float = 1e-6) -> bool:
    """JSON-value equality with tuples as lists and numbers within `tolerance`."""
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, int | float) and isinstance(got, int | float):
        return _close(repr(float(got)), repr(float(want)), tolerance)
    if isinstance(want, list | tuple) and isinstance(got, list | tuple):
        return len(got) == len(want) and all(
            values_match(g, w, tolerance) for g, w in zip(got, want, strict=True)
        )
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(values_match(got[k], want[k], tolerance) for k in want)
    return got == want


def _option(item: Mapping[str, Any], key: str) -> Any:
    """An item's setting, at the top level or in its metadata, as it is (names are not JSON)."""
    return item_field(item, key, decode=False)


def _excerpt(data: bytes | str) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


class CodeVerifier:
    """Reward = all tests pass (1/0), or the fraction passed with ``partial_credit``, plus
    ``format_weight`` x format (0/1: the code in a fenced block after well-formed reasoning tags).

    ``backend``: the sandbox (``process`` or ``docker``). ``time_limit_s`` / ``memory_mb``: per test,
    unless the item sets its own. ``workers``: items judged at once (each run is its own sandbox).
    Without partial credit, judging an item stops at its first failing test, as judges do.
    """

    name = "code"
    version = "1.0.0"

    def __init__(
        self,
        partial_credit: bool = False,
        backend: Literal["process", "docker"] = "process",
        time_limit_s: float = 2.0,
        memory_mb: int = 512,
        tolerance: float = 1e-6,
        workers: int = 2,
        max_tests: int = 100,
        format_weight: float = 0.0,
        require_think: bool = False,
    ) -> None:
        if time_limit_s <= 0 or memory_mb <= 0 or workers < 1 or max_tests < 1 or format_weight < 0:
            raise ValueError(
                "time_limit_s, memory_mb, workers and max_tests must be positive, format_weight >= 0"
            )
        self.partial_credit = partial_credit
        self.backend = backend
        self.time_limit_s = time_limit_s
        self.memory_mb = memory_mb
        self.tolerance = tolerance
        self.workers = workers
        self.max_tests = max_tests
        self.format_weight = format_weight
        self.require_think = require_think

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        if len(items) <= 1 or self.workers == 1:
            return [self._one(item) for item in items]
        with ThreadPoolExecutor(self.workers) as pool:  # the work happens in sandboxed processes
            return list(pool.map(self._one, items))

    def _one(self, item: Mapping[str, Any]) -> Reward:
        try:
            judged = self._judge(item)
        except ItemError as exc:
            return Reward.error(str(exc))
        except SandboxUnavailable as exc:
            return Reward.error(f"sandbox unavailable: {exc}")
        ok, why = self._format(item["response"], judged.details["language"])
        judged.details.update(format_ok=ok, format=why)
        return Reward(judged.reward + self.format_weight * ok, judged.details)

    def _format(self, response: str, language: str) -> tuple[bool, str]:
        """The paper's format reward for code: well-formed reasoning tags, then the program in a fenced
        block of its language."""
        ok, why = think_ok(response, require_think=self.require_think)
        if not ok:
            return ok, why
        tags = {
            _LANG_TAGS.get(tag.lower(), tag.lower()) for tag, _ in _FENCE.findall(final_section(response))
        }
        if language not in tags and "" not in tags:
            return False, f"no ```{language} code block after the reasoning"
        return True, "ok"

    def _limits(self, item: Mapping[str, Any]) -> Limits:
        try:
            time_limit = float(_option(item, "time_limit_s") or self.time_limit_s)
            memory_mb = int(_option(item, "memory_mb") or self.memory_mb)
        except (TypeError, ValueError, OverflowError):
            raise ItemError("`time_limit_s` and `memory_mb` must be numbers") from None
        if not (math.isfinite(time_limit) and time_limit > 0 and memory_mb > 0):
            raise ItemError("`time_limit_s` and `memory_mb` must be positive and finite")
        # wall > cpu: a program blocked on nothing still ends; sleeping past it is a TLE too
        return Limits(cpu_s=time_limit, wall_s=time_limit * 2 + 1, memory_mb=memory_mb)

    def _judge(self, item: Mapping[str, Any]) -> Reward:
        response = item.get("response")
        if not isinstance(response, str):
            raise ItemError("item has no text `response`")
        programs = program_tests(item) if item_field(item, "tests") is None else None
        if programs is not None:
            return self._judge_programs(item, response, programs)
        all_tests = tests_of(item)
        tests = all_tests[: self.max_tests]
        fn_name = _option(item, "fn_name") or _option(item, "entry_point")
        style = "function" if fn_name else "stdio"
        wanted = _option(item, "language")
        if wanted is not None and not isinstance(wanted, str):
            raise ItemError("`language` must be a string")
        code, language = extract_code(response, wanted)
        if language not in LANGUAGES:
            raise ItemError(f"unsupported language {language!r} (supported: {', '.join(LANGUAGES)})")
        if style == "function" and language != "python":
            raise ItemError("function-call style is supported for Python only")
        sandbox = get_sandbox(self.backend)
        if not sandbox.supports(language):
            raise ItemError(f"{language} is not available in the {self.backend} sandbox")
        details: dict[str, Any] = {"language": language, "style": style}
        if len(all_tests) > len(tests):
            details["tests_not_run"] = len(all_tests) - len(tests)  # over max_tests

        if language == "python":
            try:
                compile(code, "solution.py", "exec")  # parse only, nothing runs: a syntax error is a CE
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                return self._all_failed("CE", len(tests), details, f"{type(exc).__name__}: {exc}")

        limits = self._limits(item)
        if style == "function":
            build = sandbox.program("python", _HARNESS, files={"solution.py": code})
        else:
            build = sandbox.program(language, code)
        results: list[dict[str, Any]] = []
        with build as program:
            if not program.built:
                assert program.compile_result is not None
                if program.compile_result.status == "sandbox_error":
                    raise ItemError(
                        f"sandbox failed to build the program: {program.compile_result.describe()}"
                    )
                return self._all_failed("CE", len(tests), details, _excerpt(program.compile_result.stderr))
            for index, test in enumerate(tests):
                if style == "function":
                    spec = {
                        "fn_name": str(fn_name),
                        "args": test.get("args", []),
                        "kwargs": test.get("kwargs", {}),
                    }
                    run = program.run(stdin=json.dumps(spec).encode(), limits=limits)
                    verdict = self._function_verdict(run, test)
                else:
                    run = program.run(stdin=str(test.get("input", "")).encode(), limits=limits)
                    verdict = self._stdio_verdict(run, test)
                verdict["test"] = index
                results.append(verdict)
                if verdict["verdict"] != "AC" and not self.partial_credit:
                    break
        return self._reward(results, len(tests), details)

    def _judge_programs(self, item: Mapping[str, Any], response: str, programs: ProgramTests) -> Reward:
        """Tests as programs (HumanEval, MBPP, pytest forms): Python only, one sandbox run per item."""
        wanted = _option(item, "language")
        if wanted not in (None, "python"):
            raise ItemError(f"{programs.form}-style tests are Python; the item asks for {wanted!r}")
        code, _ = extract_code(response, "python")
        details: dict[str, Any] = {"language": "python", "style": programs.form}
        try:
            compile(code, "solution.py", "exec")  # parse only, nothing runs: a syntax error is a CE
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return self._all_failed("CE", programs.total, details, f"{type(exc).__name__}: {exc}")
        sandbox = get_sandbox(self.backend)
        if programs.form == "pytest":
            require_pytest(sandbox)
        limits = self._limits(item)
        results, total = run_tests(sandbox, programs, code, limits, self.partial_credit, self._classify)
        return self._reward(results, total, details)

    def _classify(self, run: RunResult) -> dict[str, Any] | None:
        """The verdict when the run did not finish normally; None when its output must be checked."""
        if run.status == "sandbox_error":
            raise ItemError(f"sandbox failed: {run.describe()}")
        if run.status == "ok":
            return None
        return {
            "verdict": _STATUS_VERDICT.get(run.status, "RE"),
            "time_s": round(run.wall_s, 3),
            "memory_mb": round(run.max_rss_mb, 1),
            "stderr": _excerpt(run.stderr),
            "status": run.describe(),
        }

    def _stdio_verdict(self, run: RunResult, test: Mapping[str, Any]) -> dict[str, Any]:
        failed = self._classify(run)
        if failed:
            return failed
        got, want = run.stdout.decode("utf-8", "replace"), str(test.get("output", ""))
        timing = {"time_s": round(run.wall_s, 3), "memory_mb": round(run.max_rss_mb, 1)}
        if outputs_match(got, want, self.tolerance):
            return {"verdict": "AC", **timing}
        return {"verdict": "WA", **timing, "expected": _excerpt(want), "got": _excerpt(got)}

    def _function_verdict(self, run: RunResult, test: Mapping[str, Any]) -> dict[str, Any]:
        failed = self._classify(run)
        if failed:
            return failed
        timing = {"time_s": round(run.wall_s, 3), "memory_mb": round(run.max_rss_mb, 1)}
        out = run.stdout.decode("utf-8", "replace")
        marked = out.rpartition(_RESULT_MARK)[2] if _RESULT_MARK in out else None
        try:
            got = json.loads(marked) if marked is not None else None
        except json.JSONDecodeError:
            marked = None
        if marked is None:
            return {"verdict": "RE", **timing, "stderr": "the function's result is not JSON-serialisable"}
        want = test.get("expected", test.get("output"))
        if values_match(got, want, self.tolerance):
            return {"verdict": "AC", **timing}
        return {
            "verdict": "WA",
            **timing,
            "expected": _excerpt(json.dumps(want)),
            "got": _excerpt(json.dumps(got)),
        }

    def _all_failed(self, verdict: Verdict, total: int, details: dict[str, Any], message: str) -> Reward:
        return Reward(
            0.0, {**details, "verdict": verdict, "passed": 0, "total": total, "compile_output": message}
        )

    def _reward(self, results: list[dict[str, Any]], total: int, details: dict[str, Any]) -> Reward:
        passed = sum(r["verdict"] == "AC" for r in results)
        first_failure = next((r["verdict"] for r in results if r["verdict"] != "AC"), "AC")
        reward = passed / total if self.partial_credit else float(passed == total)
        return Reward(
            reward, {**details, "verdict": first_failure, "passed": passed, "total": total, "tests": results}
        )
