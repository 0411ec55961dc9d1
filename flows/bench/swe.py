"""`m1 bench swe`: what a container per SWE evaluation costs, against a plain local virtualenv.

Tasks are synthesised from a real repository (isodate by default), then each task's gold patch is
evaluated N ways, all measured in this run:
- **docker**: the repair reward as training uses it: a fresh container of the task's instance image,
  the patch applied in it, the task's test files run, the log graded by swebench;
- **venv** (the baseline a user would otherwise run): one virtualenv on the host with the same
  wheels (same pytest), the task's commit exported to a temporary folder, the same patch applied by
  git, the same test files run by the same command and graded the same way, no isolation at all.
Reported: the container start overhead (``true`` in the instance image vs a bare process), seconds per
task and tasks per minute with 1 and 2 workers, and the ratio docker/venv: the cost of isolation.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import describe_start, print_start
from flows.errors import InputError
from flows.swe.repos import make_repos, profile
from sandboxes import SandboxUnavailable
from sandboxes.container import DockerSandbox, cleanup_on_signals, engine
from sandboxes.limits import RunResult
from sandboxes.swe_images import SWEImages, default_cache, pythonpath
from sandboxes.swe_run import START, TestRun, files_of
from verifiers.swe import SWEScorer, SWETask, statuses


def _venv(wheels: Path, root: Path) -> Path:
    """A host virtualenv with the environment's wheels, installed offline as the image does."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    py = root / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels), "-r",
                    str(wheels / "requirements.txt")], check=True)  # fmt: skip
    return py


def venv_repair(py: Path, repo_dir: Path, task) -> bool:
    """The baseline: the same patch and tests in a plain folder and virtualenv on the host.

    Resolved here means the suite ran and reported no failure. Matching test ids one by one (as the
    container run does) would be wrong on a host interpreter: some suites build parametrize ids from
    sets whose order follows hash(None), an address in Python 3.11, so the ids differ by build."""
    with tempfile.TemporaryDirectory(prefix="m1-bench-venv-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(repo_dir), "archive", task.base_commit], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        subprocess.run(["git", "apply", "-"], cwd=tmp, input=task.patch.encode(), check=True)
        env = {**os.environ, "PYTHONPATH": pythonpath(repo_dir, task.base_commit).replace("/testbed", tmp),
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
        cmd = [str(py), "-m", "pytest", "-rA", "-p", "no:cacheprovider", *files_of(task.tests)]
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    log = f"{START}\n{done.stdout}"
    found = statuses(
        TestRun(RunResult("ok", done.returncode, None, b"", b"", 0.0, 0.0, 0.0, False), log, False)
    )
    return (
        done.returncode == 0
        and len(found) >= len(task.tests)
        and set(found.values()) <= {"PASSED", "SKIPPED"}
    )


def _rate(evaluate, tasks: list, workers: int) -> tuple[float, float]:
    """(seconds per task, tasks per minute) evaluating all tasks with `workers` at a time."""
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        ok = list(pool.map(evaluate, tasks))
    wall = time.perf_counter() - start
    if not all(ok):
        raise RuntimeError(f"a gold patch did not resolve its task ({ok})")
    return wall / len(tasks), 60 * len(tasks) / wall


@app.command("swe")
def bench_swe(
    tasks: Annotated[int, typer.Option(min=1, help="Tasks to synthesise and evaluate.")] = 4,
    repo: Annotated[str, typer.Option(help="Repository profile to synthesise from.")] = "isodate",
    runs: Annotated[int, typer.Option(min=1, help="Runs of `true` for the start overhead.")] = 10,
) -> None:
    """Container start overhead and SWE evaluation throughput (1 and 2 workers) vs a local virtualenv."""
    # heavy: libcst; not at m1 start-up
    from flows.swe.synthesize import SynthesisParams, synthesize_repo

    console = Console()
    print_start(console)
    try:
        client = engine()
    except SandboxUnavailable as exc:
        raise InputError(str(exc)) from None
    p = profile(repo)
    root = default_cache() / "bench-repos"
    with (
        cleanup_on_signals(),
        console.status(f"preparing {tasks} {repo} tasks (repository, images, synthesis) ..."),
    ):
        make_repos([repo], root)
        scorer = SWEScorer(root, images=SWEImages(client=client))
        rows = synthesize_repo(p, root / repo, tasks, SynthesisParams(seed=0), scorer).tasks
        work = [SWETask.from_row(r) for r in rows]
        for t in work:
            t.image = scorer.image(t)
        venv_root = Path(tempfile.mkdtemp(prefix="m1-bench-venv-"))
        py = _venv(scorer.images.wheelhouse(p.python_packages), venv_root)

    try:

        def bare() -> None:
            subprocess.run(["true"], check=True)

        sandbox = DockerSandbox(work[0].image, client=client)

        def contained() -> None:
            result = sandbox.run(["true"])
            if not result.ok:
                raise RuntimeError(result.describe())

        rows_out = []
        # The containers' processes are dockerd's children, not this process's, so the load meter would count
        # their CPU as other processes' load: the two sides instead take turns per worker count, each task set
        # docker then venv, with the load printed before measuring and after.
        console.print(describe_start("before measuring"), highlight=False)
        with cleanup_on_signals(), console.status("measuring ..."):
            starts = {}
            for name, call in (("process", bare), ("container", contained)):
                call()
                times = []
                for _ in range(runs):
                    t0 = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - t0)
                starts[name] = statistics.median(times)
            for workers in (1, 2):
                docker = _rate(lambda t: scorer.repair(t, t.patch).reward == 1.0, work, workers)
                local = _rate(lambda t: venv_repair(py, root / repo, t), work, workers)
                rows_out.append((workers, docker, local))

        table = Table(
            title=f"SWE evaluation: {len(work)} {repo} tasks (gold patches), docker vs a local venv"
        )
        for col in ("measure", "docker", "venv", "docker / venv"):
            table.add_column(col, justify="left" if col == "measure" else "right")
        table.add_row("start `true` (median ms)", f"{starts['container'] * 1e3:.0f}", f"{starts['process'] * 1e3:.1f}",
                      f"{starts['container'] / starts['process']:.0f}x")  # fmt: skip
        for workers, (d_s, d_rate), (v_s, v_rate) in rows_out:
            table.add_row(f"s per task, {workers} worker(s)", f"{d_s:.2f}", f"{v_s:.2f}", f"{d_s / v_s:.2f}x")
            table.add_row(
                f"tasks per minute, {workers} worker(s)",
                f"{d_rate:.1f}",
                f"{v_rate:.1f}",
                f"{d_rate / v_rate:.2f}x",
            )
        console.print(table)
        console.print(
            f"container overhead per evaluation: {(rows_out[0][1][0] - rows_out[0][2][0]):.2f} s "
            f"({len(work[0].tests)} tests per task); 2 workers on {os.cpu_count()} cores",
            highlight=False,
        )
        console.print(describe_start("after measuring"), highlight=False)
    finally:  # the venv is this run's alone (40 MB); it was left in the temp folder before
        shutil.rmtree(venv_root, ignore_errors=True)
