"""`m1 bench sandbox`: what isolation costs per run, for each sandbox backend.

Every backend runs the same tiny program (`python3 -c pass` by default) N times, one after the other;
the baseline is a bare `subprocess.run` of it on the host, measured in the same run. The overhead is
the sandbox's setup and teardown (namespaces, rlimits and GNU time for `process`; a container
create/start/wait/remove for `docker`), which is what a reward verifier pays per test case.

Then the code verifier's time per item in each form of tests it reads: one problem (add two integers,
three tests, a correct solution) as stdin/stdout tests (the baseline: one sandbox run per test), as
function calls, and as the programs of HumanEval, MBPP and pytest (one run per item).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import print_start
from flows.errors import InputError
from sandboxes import SandboxUnavailable, get_sandbox
from sandboxes.process import SANDBOX_PATH
from verifiers.code import CodeVerifier


@dataclass(frozen=True)
class Overhead:
    backend: str
    runs: int
    median_s: float
    p90_s: float
    note: str = ""


def _row(backend: str, times: list[float]) -> Overhead:
    ordered = sorted(times)
    return Overhead(backend, len(times), statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))])


def measure_overhead(backends: list[str], runs: int, argv: list[str] | None = None) -> list[Overhead]:
    """Per-run wall time of `argv` bare on the host ("subprocess", first row) and in each backend."""
    argv = argv or ["python3", "-c", "pass"]
    # The same executable the sandboxes find (not a pyenv shim or venv earlier on our PATH).
    host_argv = [shutil.which(argv[0], path=SANDBOX_PATH) or argv[0], *argv[1:]]

    def bare() -> None:
        subprocess.run(host_argv, check=True, stdin=subprocess.DEVNULL, capture_output=True, env={})

    calls: dict[str, Callable[[], None]] = {"subprocess": bare}
    unavailable: dict[str, str] = {}
    for backend in backends:
        try:
            sandbox = get_sandbox(backend)  # type: ignore[arg-type]
        except SandboxUnavailable as exc:
            unavailable[backend] = f"unavailable: {exc}"
            continue

        def sandboxed(sandbox=sandbox) -> None:
            result = sandbox.run(argv)
            if not result.ok:
                raise RuntimeError(f"{sandbox.name} sandbox: {result.describe()}: {result.stderr[-500:]!r}")

        calls[backend] = sandboxed
    for call in calls.values():
        call()  # warm-up: page cache, image layers, imports
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):  # the backends take turns, run by run, so they all see the same machine load
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    rows = [_row(name, t) for name, t in times.items()]
    rows += [Overhead(b, 0, float("nan"), float("nan"), note) for b, note in unavailable.items()]
    return sorted(rows, key=lambda r: ["subprocess", *backends].index(r.backend))


_CASES = [(1, 2), (5, 7), (-3, 3)]
_ADD = "```python\ndef add(a, b):\n    return a + b\n```"
FORM_ITEMS: dict[str, tuple[str, dict]] = {  # form -> (what a test is, the item)
    "stdio": (
        "stdin/stdout run",
        {
            "response": "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
            "tests": [{"input": f"{a} {b}\n", "output": f"{a + b}\n"} for a, b in _CASES],
        },
    ),
    "function": (
        "fn_name call",
        {
            "response": _ADD,
            "fn_name": "add",
            "tests": [{"args": [a, b], "expected": a + b} for a, b in _CASES],
        },
    ),
    "humaneval": (
        "assert in check()",
        {
            "response": _ADD,
            "entry_point": "add",
            "test": "def check(candidate):\n"
            + "".join(f"    assert candidate({a}, {b}) == {a + b}\n" for a, b in _CASES),
        },
    ),
    "mbpp": (
        "test_list line",
        {"response": _ADD, "test_list": [f"assert add({a}, {b}) == {a + b}" for a, b in _CASES]},
    ),
    "pytest": (
        "test_* function",
        {
            "response": _ADD,
            "test": "from solution import add\n"
            + "".join(
                f"\n\ndef test_{i}():\n    assert add({a}, {b}) == {a + b}\n"
                for i, (a, b) in enumerate(_CASES)
            ),
        },
    ),
}


def measure_item_times(backends: list[str], items: int) -> dict[str, dict[str, Overhead]]:
    """backend -> form -> seconds per item of CodeVerifier.verify([item]), the forms taking turns;
    a backend that cannot run here gets one row with the reason. Every timed item must score 1."""
    verifiers: dict[str, CodeVerifier] = {}
    out: dict[str, dict[str, Overhead]] = {}
    for backend in backends:
        verifier = CodeVerifier(backend=backend, workers=1)  # type: ignore[arg-type]
        (probe,) = verifier.verify([FORM_ITEMS["pytest"][1]])  # warm-up: imports, image, pytest check
        if str(probe.details.get("error", "")).startswith("sandbox unavailable"):
            out[backend] = {"": Overhead(backend, 0, float("nan"), float("nan"), probe.details["error"])}
        else:
            verifiers[backend] = verifier
    times: dict[tuple[str, str], list[float]] = {(b, f): [] for b in verifiers for f in FORM_ITEMS}
    for _ in range(items):
        for (backend, form), spent in times.items():
            t0 = time.perf_counter()
            (reward,) = verifiers[backend].verify([FORM_ITEMS[form][1]])
            spent.append(time.perf_counter() - t0)
            if reward.reward != 1.0:
                raise RuntimeError(f"{backend} sandbox, {form} form: a correct solution scored {reward}")
    for (backend, form), spent in times.items():
        out.setdefault(backend, {})[form] = _row(backend, spent)
    return out


@app.command("sandbox")
def bench_sandbox(
    runs: Annotated[int, typer.Option(min=1, help="Timed runs per backend (median and p90 reported).")] = 20,
    backends: Annotated[str, typer.Option(help="Comma-separated sandbox backends.")] = "process,docker",
    items: Annotated[
        int, typer.Option(min=0, help="Timed code-verifier items per test form and backend (0: skip).")
    ] = 10,
) -> None:
    """Per-run overhead of the process and docker sandboxes against a bare subprocess, and the code
    verifier's time per item in each test form (stdin/stdout, function, HumanEval, MBPP, pytest)."""
    names = [b.strip() for b in backends.split(",") if b.strip()]
    unknown = sorted(set(names) - {"process", "docker"})
    if unknown:
        raise InputError(f"--backends: unknown sandbox backend(s) {', '.join(unknown)}; use process, docker")

    console = Console()
    print_start(console)
    print_overhead(console, names, runs)
    if items:
        print_item_times(console, names, items)


def print_overhead(console, backends: list[str], runs: int) -> None:
    """Measure and print the per-run overhead table (also used by `m1 bench verify`)."""
    with console.status(f"running `python3 -c pass` {runs}x bare and in {', '.join(backends)} ..."):
        rows = measure_overhead(backends, runs)
    base = rows[0].median_s
    table = Table(title=f"sandbox overhead per run: python3 -c pass, {runs} runs each, backends taking turns")
    for col in ("backend", "median ms", "p90 ms", "overhead ms", "x subprocess"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    for r in rows:
        if r.runs == 0:
            table.add_row(r.backend, "-", "-", "-", "-")
            continue
        table.add_row(r.backend, f"{r.median_s * 1e3:.1f}", f"{r.p90_s * 1e3:.1f}",
                      f"{(r.median_s - base) * 1e3:+.1f}", f"{r.median_s / base:.2f}x")  # fmt: skip
    console.print(table)
    for r in rows:
        if r.note:
            console.print(f"{r.backend}: {r.note}")


def print_item_times(console, backends: list[str], items: int) -> None:
    """Measure and print the code verifier's time per item by test form, stdin/stdout as the baseline."""
    with console.status(
        f"verifying one problem in {len(FORM_ITEMS)} test forms {items}x in {', '.join(backends)} ..."
    ):
        rows = measure_item_times(backends, items)
    table = Table(
        title=f"code verifier per item: one problem, 3 tests, a correct solution; {items} items per form"
    )
    table.add_column("form")
    table.add_column("a test is")
    table.add_column("runs", justify="right")
    for backend in rows:
        for col in ("median ms", "p90 ms", "x stdio"):
            table.add_column(f"{backend} {col}", justify="right")
    for form, (unit, item) in FORM_ITEMS.items():
        cells = [form, unit, str(len(item["tests"])) if "tests" in item else "1"]
        for by_form in rows.values():
            row, base = by_form.get(form), by_form.get("stdio")
            if row is None or base is None:
                cells += ["-", "-", "-"]
                continue
            cells += [
                f"{row.median_s * 1e3:.1f}",
                f"{row.p90_s * 1e3:.1f}",
                f"{row.median_s / base.median_s:.2f}x",
            ]
        table.add_row(*cells)
    console.print(table)
    for backend, by_form in rows.items():
        if "" in by_form:
            console.print(f"{backend}: {by_form[''].note}")
