"""Ctrl-C and SIGTERM for every `m1` command: stopped within seconds, one line, nothing half-written.

An `m1` process splits in two as it starts (`supervise`): the process the terminal (or a process
manager) started stays as a small supervisor, and the command runs in a forked worker in a session of
its own. Everything the command starts (the temporary Prefect server, a judge server, torchrun and its
ranks, Dask workers, process pools) lives in the worker's process group, so a terminal's Ctrl-C (SIGINT
to the foreground process group) or a SIGTERM reaches the supervisor alone, and only the supervisor
decides what the rest hears and when:

    supervisor (the pid the user sees)           worker (setsid; its group holds every child)
    SIGINT ----------------------------------->  SIGINT     `on_signal`: KeyboardInterrupt in the main
    SIGHUP ----------------------------------->  SIGHUP     thread; stderr to the log from now on;
    SIGTERM ---------------------------------->  STOP_TERM  Prefect marks the runs Crashed on a server
                                                             that is still up; one line; exit 130, 129
                                                             or 143, killing whatever it started
    KILL_S after the signal, or a second one:  SIGKILL to the worker's whole process group
    SIGTSTP (Ctrl-Z), then SIGCONT (fg) ------>  SIGSTOP, SIGCONT to the worker's group

STOP_TERM rather than SIGTERM because Prefect takes SIGTERM over inside a flow run: the worker does its
part first and then hands the signal to whoever holds SIGTERM (Prefect's handler marks the run Crashed;
`m1 deploy`'s stops serving). A worker that has become another program (`m1 ui` execs the Prefect
server) gets plain SIGTERM.

Before, the terminal's SIGINT hit every process of the command at once: the temporary Prefect server
died first, so the flow engine retried its state updates for minutes (ConnectError tracebacks), and
each child printed its own KeyboardInterrupt traceback.

The worker starts its way out at most GRACE_S after the signal whatever its unwinding does (task-runner
threads cannot be interrupted, and a subflow's runner waits for them; a thread watching the signals
starts it even when the main thread never runs the handler), marking the runs Crashed itself where
Prefect did not get to; the supervisor kills the worker's process group at KILL_S: every `m1` command
ends within 5 seconds. Killing is safe because every output is
written atomically (temporary name + rename: checkpoints, final models, dataset versions, reports), which
is also why a run killed with SIGKILL resumes bitwise (tests/rl/test_faults.py); the rerun resumes from
the newest complete checkpoint and the task cache.

If the supervisor itself is killed (SIGKILL), the worker dies with it (PR_SET_PDEATHSIG), as the one
process did before. Not a flow: how the CLI (flows/cli.py) runs every command.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from flows import logs
from flows.home import m1_home

GRACE_S = 1.8  # the worker starts its way out this long after the signal at the latest
KILL_S = 4.0  # ... and the supervisor kills the worker's process group at this point
STOP_TERM = signal.SIGUSR1  # the supervisor's "terminate" to the worker (Prefect does not take it over)
WORKER_ENV = "M1_SUPERVISOR_PID"  # set in the worker (and so in everything it starts)
NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP, STOP_TERM}
RERUN = "run the same command again to resume from the last checkpoint and cached steps"

received: int | None = None  # the signal that stopped this command (SIGINT, SIGTERM or SIGHUP)
_where = ""  # the flow run that was running when it came: its name and id
_where_id = None
_started = 0.0
# Taken once, by whichever of the handler and the signal-watching thread starts the way out.
_begun = threading.Lock()
_begun_done = threading.Event()  # ... and set once it has: `received` is set from then on
_main_interrupted = False  # the main thread has had its KeyboardInterrupt
_console_fd: int | None = None  # the real stderr, once stderr goes to the log file
_finished = threading.Lock()


# -- the supervisor -------------------------------------------------------------------------------------


def is_entry_point() -> bool:
    """Whether this process was started to run `m1` (the console script, or ``python -c`` calling
    `flows.cli.main`) with the arguments it is running, rather than a program calling `main()` in
    process (a test), which must not be forked."""
    argv, orig = sys.argv, getattr(sys, "orig_argv", [])
    if not argv or len(orig) < len(argv):
        return False
    if orig[len(orig) - len(argv) + 1 :] != argv[1:]:
        return False
    return argv[0] == "-c" or Path(argv[0]).name == "m1"


def supervise() -> None:
    """Split into supervisor and worker; returns in the worker (or at once where there is nothing to
    split: not `m1` itself, already a worker's child, no fork). The supervisor never returns."""
    if os.environ.get(WORKER_ENV) or not hasattr(os, "fork") or not is_entry_point():
        return
    if threading.active_count() > 1:  # forking a threaded process is unsafe; nothing starts one earlier
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    supervisor = os.getpid()
    # Held back, not lost, until each side has its handlers: the supervisor's a moment after the fork,
    # the worker's in `install`.
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    alive_r, alive_w = os.pipe()  # open while the supervisor lives: the worker's group watches it
    worker = os.fork()
    if worker == 0:
        os.close(alive_w)
        os.setsid()  # out of the terminal's foreground process group: Ctrl-C reaches the supervisor only
        os.environ[WORKER_ENV] = str(supervisor)
        _die_with_parent()
        if os.getppid() != supervisor:  # it died before the line above
            os._exit(128 + signal.SIGKILL)
        _watch_supervisor(alive_r)
        return
    os.close(alive_r)
    os._exit(_supervisor(worker))


def _watch_supervisor(alive: int) -> None:
    """A small process in the worker's group that kills the whole group if the supervisor dies (a
    `kill -9` of the pid the user started): the worker dies with it (PR_SET_PDEATHSIG), but what the
    worker started would not, nor a worker that became another program (`m1 ui`)."""
    if os.fork() != 0:
        os.close(alive)
        return
    for signum in (*HELD, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)  # the worker's group hears only the supervisor's end
    with contextlib.suppress(OSError):
        while os.read(alive, 1):  # nobody writes: it returns b"" once the supervisor is gone
            pass
    os.killpg(0, signal.SIGKILL)
    os._exit(0)  # the supervisor ended normally and the group is gone already


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux PR_SET_PDEATHSIG), as a `kill -9` of the one
    process did before the split."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (/proc/PID/status, SigCgt): a worker that
    replaced itself with another program (`m1 ui` execs the Prefect server) gets plain SIGTERM."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError):
        pass
    return False


def _supervisor(worker: int) -> int:
    """Wait for the worker, handing it the signals the supervisor receives; its exit code."""
    state: dict = {"signal": None, "killed": False}
    timer: list[threading.Timer] = []

    def kill_group() -> None:
        state["killed"] = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker, signal.SIGKILL)

    def on_signal(signum, _frame) -> None:
        if state["signal"] is not None:  # a second Ctrl-C: stop now
            kill_group()
            return
        state["signal"] = signum
        forward = {signal.SIGINT: signal.SIGINT, signal.SIGHUP: signal.SIGHUP}.get(signum, STOP_TERM)
        if forward != signal.SIGINT and not _catches(worker, forward):
            forward = signal.SIGTERM  # a worker that is another program now
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, forward)
        timer.append(threading.Timer(KILL_S, kill_group))
        timer[0].daemon = True
        timer[0].start()

    def on_stop(_signum, _frame) -> None:  # Ctrl-Z: the worker's group stops with the supervisor
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker, signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, on_stop)  # here again after `fg` / `bg`
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker, signal.SIGCONT)

    for signum in NAMES:
        signal.signal(signum, on_signal)
    signal.signal(signal.SIGTSTP, on_stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
    _, status = os.waitpid(worker, 0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(worker, signal.SIGKILL)  # whatever the worker started and left behind
    if state["signal"] is not None:
        if state["killed"]:
            took = "at a second signal" if not timer or timer[0].is_alive() else f"after {KILL_S:g} s"
            _write(
                sys.stderr.fileno(),
                f"interrupted ({NAMES[state['signal']]}): stopped (killed {took}); {RERUN}\n",
            )
        return 128 + state["signal"]
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


# -- the worker (or a process running alone) --------------------------------------------------------------


def install() -> None:
    """The worker's handlers: SIGINT, SIGTERM, SIGHUP and the supervisor's STOP_TERM stop the command.
    A thread also watches the signals as they arrive (Python's wakeup fd), so the way out and its deadline
    start even while the main thread cannot run a handler (stuck in C code).

    Nothing is installed in a program that calls `main()` in process (a test): the handlers, the wakeup
    fd and its thread would outlive the call, and a signal the program later sends itself would start
    the way out, whose deadline kills the process group (the test runner's, and whoever started it)."""
    if not (os.environ.get(WORKER_ENV) or is_entry_point()):
        return
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, STOP_TERM):
        with contextlib.suppress(ValueError):  # not the main thread: leave the handlers alone
            signal.signal(signum, on_signal)
    with contextlib.suppress(ValueError):
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        threading.Thread(target=_watch_signals, args=(wake_r,), name="m1-signals", daemon=True).start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)  # what came meanwhile is handled now


def _stop_for(signum: int) -> int | None:
    """The signal a command stops for when ``signum`` arrives (STOP_TERM is SIGTERM), or None where the
    command handles it its own way (`m1 deploy`, a server: their handler in place of ours)."""
    stop = signal.SIGTERM if signum == STOP_TERM else signum
    handler = signal.getsignal(stop)
    if not callable(handler) or handler is on_signal or _is_prefects(handler):
        return stop
    return None


def _is_prefects(handler) -> bool:
    return callable(handler) and getattr(handler, "__module__", "").startswith("prefect")


def _watch_signals(fd: int) -> None:
    while data := os.read(fd, 64):
        for signum in data:
            if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, STOP_TERM) and (
                stop := _stop_for(signum)
            ):
                _begin(stop)


def _begin(stop: int) -> None:
    """Start the way out, once (the handler in the main thread or the watching thread, whichever comes
    first): the signal and its time, stderr to the log, the deadline."""
    global received, _started
    if not _begun.acquire(blocking=False):
        # the other one is starting it: wait until `received` is set, or the main thread's way out
        # (`finish`, when `received` is set) would be skipped and its KeyboardInterrupt printed
        _begun_done.wait(1.0)
        return
    _started = time.monotonic()
    _stderr_to_log()  # before `received` is set: whatever reacts to it writes to the log already
    if is_worker():
        _mute_console_logs()
    received = stop
    _begun_done.set()
    threading.Thread(target=_deadline, name="m1-interrupt-deadline", daemon=True).start()


def on_signal(signum, frame) -> None:
    """Stop the command: the first signal starts the way out and interrupts the main thread (Prefect's
    own SIGTERM handler first, under a flow run: it marks the run Crashed); later ones interrupt again."""
    global _where, _main_interrupted
    stop = _stop_for(signum)
    if stop is None:  # a command that stops its own way on SIGTERM (`m1 deploy`): its handler
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, frame)
        return
    _begin(stop)
    if not _main_interrupted:
        _main_interrupted = True
        _where = _current_flow_run()
        held = signal.getsignal(signal.SIGTERM)
        if stop == signal.SIGTERM and _is_prefects(held):
            held(signal.SIGTERM, frame)
    raise KeyboardInterrupt


def exit_code() -> int:
    return 128 + received if received is not None else 0


def is_worker() -> bool:
    return os.environ.get(WORKER_ENV) is not None and os.getpgrp() == os.getpid()


def finish(*, deadline: bool = False) -> None:
    """The way out of an interrupted command, from the main thread or the deadline: the one line, the
    last log records to the Prefect API, whatever the worker started killed, then exit."""
    if not _finished.acquire(blocking=False):  # the other of the two is on its way out: wait for it
        threading.Event().wait()
    # On the way out a later signal changes nothing (a second Ctrl-C is the supervisor's: it kills the
    # group): it must not raise KeyboardInterrupt inside this function (a traceback, no line).
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, STOP_TERM):
        with contextlib.suppress(ValueError):  # not the main thread (the deadline): it exits regardless
            signal.signal(signum, signal.SIG_IGN)
    _write(_console_fd if _console_fd is not None else sys.stderr.fileno(), message() + "\n")
    _within(0.5 if deadline else 1.0, _drain_api_logs, _remove_containers)
    if not (deadline or is_worker()):
        raise SystemExit(exit_code())  # in process (a test) or a worker's child: exit as usual
    _show_cursor()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if is_worker():  # its own session: the group is what the command started, never the caller's
        _kill_my_group()
    # No interpreter shutdown: it would wait for task-runner threads still running a task.
    os._exit(exit_code())


def message() -> str:
    name = NAMES.get(received or 0, "a signal")
    where = f" in flow run {_where!r}" if _where else ""
    log = _log_path()
    return f"interrupted ({name}){where}: stopped; {RERUN}" + (
        f" (log: {log})" if log.parent.exists() else ""
    )


def _deadline() -> None:
    time.sleep(max(0.0, GRACE_S - (time.monotonic() - _started)))
    if _finished.locked():
        return
    if _where_id is None and logs.last_flow_run is not None:  # the handler never ran: the latest run to log
        _remember(*logs.last_flow_run)
    _mark_crashed(_where_id, 1.0)
    finish(deadline=True)


def _current_flow_run() -> str:
    """The name of the flow run the main thread is in (the innermost subflow), if Prefect is running one."""
    global _where_id
    if "prefect.context" not in sys.modules:
        return ""
    from prefect.context import FlowRunContext  # heavy: prefect; already imported (checked above)

    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return ""
    _where_id = ctx.flow_run.id
    return ctx.flow_run.name


def _remember(flow_run_id, name: str) -> None:
    global _where, _where_id
    _where, _where_id = name, flow_run_id


def _mark_crashed(flow_run_id, budget_s: float) -> None:
    """The main thread did not get out in time (a subflow waits for its running tasks): mark the flow
    run it was in, and the flow runs above it, Crashed, as Prefect marks them when it unwinds."""
    if flow_run_id is None:
        return

    def mark() -> None:
        # heavy: prefect (imported already: a flow is running)
        from prefect.client.orchestration import get_client
        from prefect.states import Crashed

        with get_client(sync_client=True) as client:
            run_id = flow_run_id
            while run_id is not None:
                run = client.read_flow_run(run_id)
                if run.state is not None and not run.state.is_final():
                    stopped = f"Execution was stopped by {NAMES.get(received or 0, 'a signal')}."
                    client.set_flow_run_state(run_id, Crashed(message=stopped), force=True)
                parent = run.parent_task_run_id
                run_id = client.read_task_run(parent).flow_run_id if parent else None

    _within(budget_s, mark)


def _within(budget_s: float, *work) -> None:
    """Run each of ``work`` in a thread of its own and wait for them at most ``budget_s`` in all."""
    threads = [threading.Thread(target=_quietly, args=(fn,), daemon=True) for fn in work]
    for thread in threads:
        thread.start()
    end = time.monotonic() + budget_s
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))


def _quietly(fn) -> None:
    with contextlib.suppress(Exception):
        fn()


def _drain_api_logs() -> None:
    """Send the log records still queued (the crash itself among them) to the Prefect API."""
    if "prefect.logging.handlers" not in sys.modules:
        return
    from prefect.logging.handlers import APILogWorker  # heavy: prefect; already imported (checked above)

    APILogWorker.drain_all(timeout=1.0)


def _remove_containers() -> None:
    """The Docker containers this process runs (SWE tasks) are not in its process group: kill and remove
    them, as the sandbox's exit hook does on a normal exit (which this exit skips)."""
    containers = sys.modules.get("sandboxes.container")
    if containers is not None:
        containers.remove_live()


def _log_path() -> Path:
    return m1_home() / "logs" / "m1.log"


def _stderr_to_log() -> None:
    """From the interrupt on, what this process writes to stderr (the engine's crash records, a thread's
    traceback, a library's warning) goes to the log file, not the terminal; the one line goes to the
    real stderr. Nothing is written under M1_HOME that a run did not create."""
    global _console_fd
    if not is_worker() or _console_fd is not None:
        return
    log = _log_path()
    try:
        fd = os.open(log if log.parent.is_dir() else os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    _console_fd = os.dup(2)
    os.dup2(fd, 2)
    os.close(fd)


def _mute_console_logs() -> None:
    """Log records stop going to the console (the log file keeps them): the engine's crash records and
    what the unwinding logs would otherwise reach the log file twice, once through stderr."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                handler.addFilter(lambda record: False)


def _write(fd: int, text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, text.encode())


def _show_cursor() -> None:
    """A progress bar hides the terminal's cursor while it runs; an exit cut short must give it back."""
    with contextlib.suppress(OSError, ValueError):
        if os.isatty(1):
            os.write(1, b"\x1b[?25h")


def _kill_my_group() -> None:
    """SIGKILL every other process in this worker's process group: the Prefect server, a judge server,
    Dask workers, process pools (the supervisor does it too, once this process is gone)."""
    me, group = os.getpid(), os.getpgrp()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
            pgrp = int(stat.rsplit(")", 1)[1].split()[2])  # after "pid (comm) state ppid"
        except (OSError, ValueError, IndexError):
            continue
        if pgrp == group and int(entry.name) != me:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
