"""How every `m1` command stops (flows/interrupts.py), on small real programs that split into supervisor
and worker exactly as `m1` does, and on `m1 run` itself: Ctrl-C (SIGINT to the process group) exits 130
and SIGTERM to the process 143, within 5 seconds, with one line and no traceback, and nothing the command
started outlives it: not when the command ignores the interrupt, not when it blocks the signal, not when
the supervisor is killed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from flows import interrupts
from tests.processes import interrupt

SECONDS = 5.0
ROOT = Path(__file__).resolve().parents[2]

# A command as `m1` runs one: supervise(), install(), then the work (here: a child process that would
# outlive it, and a loop), and the CLI's way out (flows/cli.py: main).
PROGRAM = """
import os, signal, subprocess, sys, time
from pathlib import Path
from flows import interrupts
interrupts.supervise()
interrupts.install()
try:
    child = subprocess.Popen(["sleep", "300"])
    Path(sys.argv[1] + ".tmp").write_text(f"{os.getpid()} {child.pid}")
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    MODE = sys.argv[2]
    if MODE == "noisy":  # a thread that fails because the command is stopping: its traceback is for the log
        import threading
        def fails_once_stopping():
            while interrupts.received is None:
                time.sleep(0.01)
            raise RuntimeError("a task thread failed as the command stopped")
        noisy = threading.Thread(target=fails_once_stopping)
        noisy.start()
    if MODE == "container":  # a task running in a Docker sandbox (SWE tasks, the code verifier's Docker backend)
        import threading
        from sandboxes import get_sandbox
        from sandboxes.limits import Limits
        box = get_sandbox("docker")
        long = Limits(wall_s=600, cpu_s=600)
        threading.Thread(target=box.run, args=(["sleep", "600"],), kwargs={"limits": long}, daemon=True).start()
    if MODE == "deaf":  # a main thread that cannot take the signal, another thread can (it gets it)
        import threading
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
        threading.Event().wait()  # a wait only the main thread's own signal would interrupt
    if MODE == "blocks":  # a worker that never sees the signal (stuck in C code, say)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
    while True:
        try:
            time.sleep(0.05)
        except KeyboardInterrupt:
            if MODE == "noisy":
                noisy.join()  # as a task runner waits for its threads
            if MODE != "ignores":
                raise
finally:
    if interrupts.received is not None:
        interrupts.finish()
"""


def program(tmp_path: Path, mode: str = "stops") -> tuple[list[str], dict[str, str], Path]:
    pids = tmp_path / "pids"
    args = [sys.executable, "-c", PROGRAM, str(pids), mode]
    env = os.environ | {"PYTHONPATH": str(ROOT), "M1_HOME": str(tmp_path / "home")}
    env.pop(interrupts.WORKER_ENV, None)
    if mode == "noisy":  # a run has written its log by then
        (tmp_path / "home" / "logs").mkdir(parents=True)
    return args, env, pids


def wait_for_pids(proc: subprocess.Popen, pids: Path) -> None:
    """Until the program has written its worker's and child's pids (it must not end before)."""
    deadline = time.monotonic() + 120
    while not pids.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)


def worker_and_child(pids: Path) -> tuple[int, int]:
    worker, child = pids.read_text().split()
    return int(worker), int(child)


def gone(pid: int, within: float = 2.0) -> bool:
    """Whether ``pid`` is dead (a zombie counts) or dies ``within`` seconds (a SIGKILL takes a moment)."""
    deadline = time.monotonic() + within
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("signum", "group", "mode"),
    [
        (signal.SIGINT, True, "stops"),  # Ctrl-C in a terminal
        (signal.SIGTERM, False, "stops"),  # a process manager
        (signal.SIGHUP, True, "stops"),  # the terminal closed
        (signal.SIGINT, True, "ignores"),  # a command that swallows KeyboardInterrupt: the worker's deadline
        (signal.SIGTERM, False, "blocks"),  # one that never gets the signal: the supervisor's kill
        (signal.SIGINT, True, "noisy"),  # a thread's traceback on the way out goes to the log
    ],
    ids=["sigint-group", "sigterm-pid", "sighup-group", "ignored", "blocked", "noisy"],
)
def test_a_command_stops_within_seconds_with_one_line_and_its_children(tmp_path, signum, group, mode):
    args, env, pids = program(tmp_path, mode)
    stopped = interrupt(args, env, pids.exists, signum, tmp_path, group=group, timeout=120)
    worker, child = worker_and_child(pids)
    assert stopped.returncode == 128 + signum, stopped
    assert stopped.seconds < SECONDS, stopped
    if mode == "blocks":  # only the supervisor's kill ends it
        assert stopped.seconds >= interrupts.KILL_S - 0.5, stopped
    elif mode == "ignores":
        assert interrupts.GRACE_S - 0.5 <= stopped.seconds < interrupts.KILL_S, stopped
    else:
        assert stopped.seconds < interrupts.GRACE_S, stopped
    assert "Traceback" not in stopped.stderr + stopped.stdout, stopped
    name = signal.Signals(signum).name
    killed = f" (killed after {interrupts.KILL_S:g} s)" if mode == "blocks" else ""
    log = tmp_path / "home" / "logs" / "m1.log"
    where = f" (log: {log})" if log.parent.exists() else ""
    line = f"interrupted ({name}): stopped{killed}; {interrupts.RERUN}{'' if killed else where}"
    assert stopped.stderr.splitlines() == [line], stopped
    assert gone(worker) and gone(child) and stopped.left == [], stopped
    if mode == "noisy":
        assert "RuntimeError: a task thread failed as the command stopped" in log.read_text()


def test_a_second_ctrl_c_stops_at_once(tmp_path):
    args, env, pids = program(tmp_path, "blocks")
    with (tmp_path / "err").open("w") as err:
        proc = subprocess.Popen(args, env=env, stderr=err, start_new_session=True)
    wait_for_pids(proc, pids)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=10) == 130
    assert time.monotonic() - t0 < 1.0
    assert "stopped (killed at a second signal)" in (tmp_path / "err").read_text()
    assert all(gone(pid) for pid in worker_and_child(pids))


def test_a_worker_signalled_itself_exits_143_and_takes_down_what_it_started(tmp_path):
    """`kill <worker pid>` (or pkill): the worker stops as if the supervisor had handed the signal on, and
    kills its own process group itself, here while the supervisor is stopped and cannot."""
    args, env, pids = program(tmp_path)
    proc = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_pids(proc, pids)
    worker, child = worker_and_child(pids)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        os.kill(worker, signal.SIGTERM)
        assert gone(worker, within=5) and gone(child, within=5)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    assert proc.wait(timeout=10) == 143
    assert proc.stderr.read().splitlines() == [f"interrupted (SIGTERM): stopped; {interrupts.RERUN}"]


def test_a_worker_whose_main_thread_cannot_take_the_signal_stops_by_its_deadline(tmp_path):
    """A signal sent to the worker process is taken by another of its threads while the main thread cannot
    run the handler: the thread that watches the signals starts the way out, and the worker exits by its
    deadline with its one line, before the supervisor would kill it."""
    args, env, pids = program(tmp_path, "deaf")
    proc = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_pids(proc, pids)
    worker, child = worker_and_child(pids)
    time.sleep(0.2)  # the main thread has masked the signals by now
    t0 = time.monotonic()
    os.kill(worker, signal.SIGINT)
    assert proc.wait(timeout=10) == 130
    assert interrupts.GRACE_S - 0.5 < time.monotonic() - t0 < interrupts.KILL_S
    assert proc.stderr.read().splitlines() == [f"interrupted (SIGINT): stopped; {interrupts.RERUN}"]
    assert gone(child)


def test_the_work_dies_with_a_killed_supervisor(tmp_path):
    """`kill -9` of the pid the user started ends the work and everything it started, as it did before
    the split."""
    args, env, pids = program(tmp_path)
    proc = subprocess.Popen(args, env=env, start_new_session=True)
    wait_for_pids(proc, pids)
    worker, child = worker_and_child(pids)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert gone(worker, within=5), "the worker outlived its supervisor"
    assert gone(child, within=5), "a process the worker started outlived the supervisor"


# A shell's job control, in little: the command runs in a process group of its own inside the shell's
# session (a group whose parent is in another group of the session is not orphaned: Ctrl-Z stops it).
SHELL = """
import subprocess, sys
job = subprocess.Popen(sys.argv[1:], process_group=0)
print(job.pid, flush=True)
job.wait()
"""


def test_ctrl_z_stops_the_work_and_fg_resumes_it(tmp_path):
    args, env, pids = program(tmp_path)
    shell = subprocess.Popen(
        [sys.executable, "-c", SHELL, *args],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        job = int(shell.stdout.readline())
        wait_for_pids(shell, pids)
        worker, child = worker_and_child(pids)
        processes = (job, worker, child)
        status = lambda: {psutil.Process(pid).status() for pid in processes}  # noqa: E731
        os.killpg(job, signal.SIGTSTP)  # what the terminal sends the foreground job on Ctrl-Z
        deadline = time.monotonic() + 5
        while status() != {psutil.STATUS_STOPPED}:
            assert time.monotonic() < deadline, status()
            time.sleep(0.05)
        os.killpg(job, signal.SIGCONT)  # what the shell sends on `fg`
        deadline = time.monotonic() + 5
        while psutil.STATUS_STOPPED in status():
            assert time.monotonic() < deadline, status()
            time.sleep(0.05)
        os.killpg(job, signal.SIGINT)
        assert shell.wait(timeout=10) == 0
        assert gone(worker) and gone(child)
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)


def test_only_m1_itself_is_split(monkeypatch):
    """A program that calls `main()` in process (a test) is never forked; the console script and
    ``python -c "...main()" ARGS`` are."""
    cases = [
        (["/v/bin/m1", "run", "-s", "a=1"], ["/v/bin/python", "/v/bin/m1", "run", "-s", "a=1"], True),
        (["-c", "run"], ["/v/bin/python", "-c", "from flows.cli import main; main()", "run"], True),
        (["-c"], ["/v/bin/python", "-c", "code"], True),
        (["m1", "tasks", "logic"], ["/v/bin/python", "-m", "pytest", "tests/tasks"], False),  # monkeypatched
        (["m1", "--help"], ["/v/bin/python", "-c", "import sys; sys.argv = ['m1', '--help']"], False),
        (["/v/bin/pytest", "-x"], ["/v/bin/python", "/v/bin/pytest", "-x"], False),
    ]
    for argv, orig, expected in cases:
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "orig_argv", orig)
        assert interrupts.is_entry_point() is expected, (argv, orig)


def test_main_in_process_leaves_the_callers_signals_alone(monkeypatch, capsys):
    """A test that runs `main()` in process and later signals itself (tests/sandboxes: SIGINT inside
    `cleanup_on_signals`) must not find m1's handlers, wakeup fd and watching thread still there: they
    started the way out, whose deadline SIGKILLed the whole process group, CI's runner with it."""
    from flows.cli import main

    held = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, interrupts.STOP_TERM)
    before = {s: signal.getsignal(s) for s in held}
    fd_before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd_before)
    monkeypatch.setattr(sys, "argv", ["m1", "--help"])
    with pytest.raises(SystemExit):
        main()
    capsys.readouterr()
    assert {s: signal.getsignal(s) for s in held} == before
    fd_after = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd_after)
    assert fd_after == fd_before
    assert "m1-signals" not in {t.name for t in threading.enumerate()}


def test_a_deadline_outside_a_worker_kills_no_group(tmp_path):
    """Only a worker (a session of its own) kills its process group on the way out: a process sharing its
    group with whoever started it (a shell script, CI) exits alone."""
    child = "import signal; from flows import interrupts; interrupts.received = signal.SIGINT; interrupts.finish(deadline=True)"
    parent = f"import subprocess, sys; done = subprocess.run([sys.executable, '-c', {child!r}]); print('survived', done.returncode)"
    env = os.environ | {"PYTHONPATH": str(ROOT), "M1_HOME": str(tmp_path / "home")}
    env.pop(interrupts.WORKER_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", parent],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0 and done.stdout == "survived 130\n", (
        done.returncode,
        done.stdout,
        done.stderr,
    )


def test_a_signal_during_the_way_out_changes_nothing(tmp_path):
    """Another SIGINT while the command is on its way out (draining logs, removing containers) raises no
    KeyboardInterrupt inside it: the one line, exit 130, no traceback (seen once in CI, under load)."""
    code = textwrap.dedent(
        """
        import os, signal, time
        from flows import interrupts
        interrupts.install()
        interrupts.received = signal.SIGINT
        def slow_way_out(budget_s, *work):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        interrupts._within = slow_way_out
        interrupts.finish()
        """
    )
    env = os.environ | {"PYTHONPATH": str(ROOT), "M1_HOME": str(tmp_path / "home")}
    env.pop(interrupts.WORKER_ENV, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "Traceback" not in done.stderr, (done.returncode, done.stderr)
    assert done.stderr.startswith("interrupted (SIGINT): stopped"), done.stderr


def test_a_worker_that_replaced_itself_is_told_with_sigterm():
    """The supervisor hands SIGTERM on as STOP_TERM only to a worker that listens for it; `m1 ui` execs
    the Prefect server, which does not."""
    code = textwrap.dedent(
        """
        import signal, sys, time
        if sys.argv[1] == "listens":
            signal.signal(signal.SIGUSR1, lambda *a: None)
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    for mode, expected in (("listens", True), ("plain", False)):
        proc = subprocess.Popen([sys.executable, "-c", code, mode], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline() == "ready\n"
            assert interrupts._catches(proc.pid, interrupts.STOP_TERM) is expected
        finally:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_ctrl_c_stops_m1_run_on_dask_during_curation(tmp_path):
    """`m1 run` on its temporary Prefect server with the data steps on a local Dask cluster, stopped by
    Ctrl-C while curating: 130 within 5 s, no traceback (no Dask worker's either), nothing left running,
    every flow run it started marked Crashed rather than left Running, and every dataset version in the
    store complete."""
    from flows.store import DatasetStore

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env |= {"M1_HOME": str(home), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop(interrupts.WORKER_ENV, None)
    args = [sys.executable, "-c", "from flows.cli import main; main()", "run"]
    args += ["-s", "data.n_problems=60", "-s", "runner.kind=dask", "-s", "runner.workers=2"]
    args += ["-s", "swe.enabled=false", "-s", "runner.shards=3"]
    cache = home / "cache"
    ready = lambda: cache.is_dir() and any(cache.iterdir())  # noqa: E731 - a curation task finished
    stopped = interrupt(args, env, ready, signal.SIGINT, tmp_path)
    assert stopped.returncode == 130, stopped
    assert stopped.seconds < SECONDS, stopped
    assert "Traceback" not in stopped.stderr + stopped.stdout, stopped
    assert stopped.left == [], stopped
    assert any("dask" in c or "multiprocessing" in c for c in stopped.started), stopped
    assert stopped.stderr.strip().splitlines()[-1].startswith("interrupted (SIGINT) in flow run 'm1-tiny-"), (
        stopped
    )
    with sqlite3.connect(home / "prefect" / "prefect.db") as db:
        states = dict(db.execute("select name, state_name from flow_run"))
    assert states and "Running" not in states.values(), states
    assert states["m1-tiny"] == "Crashed", states
    store = DatasetStore(home)
    for name in store.names():
        for version in store.versions(name):
            assert store.manifest(name, version).rows == store.read(name, version).height


@pytest.mark.docker
def test_the_docker_containers_of_a_stopped_command_are_removed(tmp_path, docker_sandbox):
    """Containers are not processes of the command: they go as the sandbox's own exit hook removes them
    on a normal exit."""
    from sandboxes.container import OWNER_LABEL

    client = docker_sandbox.client
    args, env, pids = program(tmp_path, "container")

    def mine() -> list:
        worker = pids.read_text().split()[0]
        found = client.containers.list(all=True, filters={"label": OWNER_LABEL})
        return [c for c in found if c.labels[OWNER_LABEL].endswith(f":{worker}")]

    stopped = interrupt(
        args, env, lambda: pids.exists() and bool(mine()), signal.SIGINT, tmp_path, timeout=300
    )
    assert stopped.returncode == 130 and stopped.seconds < SECONDS, stopped
    assert "Traceback" not in stopped.stderr, stopped
    assert mine() == []
