"""`m1 bench sandbox`: what isolation costs per run, for each sandbox backend.

Every backend runs the same tiny program (`python3 -c pass` by default) N times, one after the other;
the baseline is a bare `subprocess.run` of it on the host, measured in the same run. The overhead is
the sandbox's setup and teardown (namespaces, rlimits and GNU time for `process`; a container
create/start/wait/remove for `docker`), which is what a reward verifier pays per test case.
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

from flows.bench import app


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
    from sandboxes import SandboxUnavailable, get_sandbox
    from sandboxes.process import SANDBOX_PATH

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


@app.command("sandbox")
def bench_sandbox(
    runs: Annotated[int, typer.Option(min=1, help="Timed runs per backend (median and p90 reported).")] = 20,
    backends: Annotated[str, typer.Option(help="Comma-separated sandbox backends.")] = "process,docker",
) -> None:
    """Per-run overhead of the process and docker sandboxes against a bare subprocess."""
    from rich.console import Console

    from flows.errors import InputError

    names = [b.strip() for b in backends.split(",") if b.strip()]
    unknown = sorted(set(names) - {"process", "docker"})
    if unknown:
        raise InputError(f"--backends: unknown sandbox backend(s) {', '.join(unknown)}; use process, docker")
    from flows.bench.load import print_start

    console = Console()
    print_start(console)
    print_overhead(console, names, runs)


def print_overhead(console, backends: list[str], runs: int) -> None:
    """Measure and print the per-run overhead table (also used by `m1 bench verify`)."""
    from rich.table import Table

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
