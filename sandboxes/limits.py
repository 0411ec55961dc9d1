"""What a sandboxed run may use (`Limits`) and what came out of it (`RunResult`)."""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass
from typing import Literal

Status = Literal[
    "ok",  # exited 0 within every limit
    "runtime_error",  # non-zero exit, or death by a signal the program caused (SIGSEGV, SIGABRT, ...)
    "timeout",  # CPU-time or wall-clock limit exceeded
    "memory",  # memory limit exceeded (allocation failed or the kernel's OOM killer struck)
    "output_limit",  # stdout + stderr exceeded `output_bytes` (the run was stopped), or a file `file_size_mb`
    "killed",  # died of a signal that none of the limits above explains
    "sandbox_error",  # the sandbox itself failed to start the program (setup, engine, image)
    "compile_error",  # only from `run_program`: the compiler rejected the source
]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. Defaults suit one competitive-programming test case."""

    cpu_s: float = 2.0  # CPU time of all processes of the run together
    wall_s: float = 5.0  # wall-clock time, counted from the start of the program
    memory_mb: int = 256  # address space per process (process backend) / cgroup memory (docker)
    processes: int = 32  # processes + threads alive at once (fork bombs stop here)
    file_size_mb: int = 16  # largest file the program may write
    open_files: int = 64  # file descriptors per process
    output_bytes: int = 1 << 20  # stdout + stderr together; more stops the run
    network: bool = False  # True keeps the host network (never for untrusted code)

    def __post_init__(self) -> None:
        for name in (
            "cpu_s",
            "wall_s",
            "memory_mb",
            "processes",
            "file_size_mb",
            "open_files",
            "output_bytes",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class RunResult:
    status: Status
    exit_code: int | None  # None when the program died of a signal or never started
    signal: int | None  # the signal that ended the program, if any
    stdout: bytes
    stderr: bytes
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    truncated: bool  # output was cut at `Limits.output_bytes`

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return _signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def describe(self) -> str:
        """One line for logs and verifier details."""
        how = f"signal {self.signal_name}" if self.signal is not None else f"exit {self.exit_code}"
        return (
            f"{self.status} ({how}, {self.wall_s:.3f}s wall, {self.cpu_s:.3f}s cpu, {self.max_rss_mb:.1f} MB)"
        )
