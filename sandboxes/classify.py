"""Turn how a run ended into a `Status`. Shared by both backends so they report alike."""

from __future__ import annotations

import signal

from sandboxes.limits import Limits, RunResult, Status

# Signals a program brings on itself by a bug: a runtime error, not an outside kill.
_SELF_INFLICTED = {
    signal.SIGSEGV,
    signal.SIGABRT,
    signal.SIGFPE,
    signal.SIGBUS,
    signal.SIGILL,
    signal.SIGTRAP,
    signal.SIGSYS,
    signal.SIGPIPE,
}

# With an address-space limit an allocation fails instead of being OOM-killed; the runtimes say so here.
_OUT_OF_MEMORY_MESSAGES = (b"MemoryError", b"std::bad_alloc", b"Cannot allocate memory", b"out of memory")


def classify(
    *,
    limits: Limits,
    exit_code: int | None,
    signum: int | None,
    stderr: bytes,
    cpu_s: float,
    max_rss_mb: float,
    wall_exceeded: bool,
    output_exceeded: bool,
    oom_killed: bool = False,
) -> Status:
    if output_exceeded or signum == signal.SIGXFSZ:  # SIGXFSZ: a file grew past `file_size_mb`
        return "output_limit"
    if wall_exceeded or signum == signal.SIGXCPU or cpu_s > limits.cpu_s:
        return "timeout"
    if signum is None and exit_code == 0:
        return "ok"
    if oom_killed or _looks_out_of_memory(limits, signum, stderr, max_rss_mb):
        return "memory"
    if signum is None or signum in _SELF_INFLICTED:
        return "runtime_error"
    return "killed"


def _looks_out_of_memory(limits: Limits, signum: int | None, stderr: bytes, max_rss_mb: float) -> bool:
    tail = stderr[-4096:]
    if any(msg in tail for msg in _OUT_OF_MEMORY_MESSAGES):
        return True
    # A crash (e.g. SIGSEGV when the stack cannot grow, SIGKILL by an OOM killer) at the memory ceiling.
    return signum in (signal.SIGSEGV, signal.SIGKILL) and max_rss_mb >= 0.9 * limits.memory_mb


def sandbox_error(message: str, wall_s: float = 0.0) -> RunResult:
    """The sandbox could not run the program at all; the message (in stderr) says why."""
    return RunResult("sandbox_error", None, None, b"", message.encode(), wall_s, 0.0, 0.0, False)
