"""Process sandbox: bubblewrap namespaces + rlimits, as an unprivileged uid, with a wall-clock kill.

Layers, outermost first, and what each one stops:

1. `subprocess` switches to the run's own uid (see workspace.py) before exec: no root, and host files
   are subject to ordinary permissions (e.g. /etc/shadow is root-only) even if a path leaked in.
2. `prlimit` sets rlimits that the whole process tree inherits:
   CPU (SIGXCPU, then SIGKILL a second later: infinite loops), AS (address space: memory bombs fail
   to allocate), NPROC (fork bombs), FSIZE (disk fill), NOFILE (fd exhaustion), CORE=0 (no dumps).
3. `bwrap` (bubblewrap, the sandbox under Flatpak) builds, without any privilege, a new
   - user namespace: the program holds no capability on the host; nested user namespaces are disabled;
   - pid namespace: it sees only its own processes and cannot signal ours; when its pid 1 dies, the
     kernel kills everything left inside, so no daemonised child outlives the run;
   - network namespace: only a downed loopback, no route anywhere;
   - mount namespace: a new root holding /usr (read-only), a fresh /proc and minimal /dev, a private
     size-capped /tmp and the work dir at /work; the root itself is read-only. Nothing else of the host (/home, /root, /etc beyond
     the dynamic-linker cache, other runs' dirs) exists in there;
   - ipc / uts / cgroup namespaces: no shared memory segments or hostname with the host;
   plus a new session (no terminal injection), an empty environment, and SIGKILL if we die.
4. We kill the bwrap process at the wall-clock deadline or when the output cap is hit; its death
   takes the namespace down with it. Either way we return only once the sandbox's pid 1 is dead,
   which the kernel allows only after every process in its namespace is gone.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence

from sandboxes import usage
from sandboxes.base import Sandbox, SandboxUnavailable
from sandboxes.capture import BoundedOutput, pump, wait_until
from sandboxes.classify import classify, sandbox_error
from sandboxes.limits import DEFAULT_LIMITS, Limits, RunResult
from sandboxes.workspace import META_MOUNT, WORK_MOUNT, Workspace

MB = 1 << 20
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
TMP_SIZE_MB = 64
SHM_SIZE_MB = 16

# Host paths the program needs read-only: the OS userland and what the dynamic linker reads.
_READONLY_PATHS = ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")
# On merged-/usr systems these are symlinks into /usr; elsewhere real directories.
_ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _filesystem_args() -> list[str]:
    args: list[str] = []
    for path in _READONLY_PATHS:
        args += ["--ro-bind-try", path, path]
    for path in _ROOT_LINKS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind-try", path, path]
    return args


def _rlimit_args(limits: Limits) -> list[str]:
    cpu = max(1, math.ceil(limits.cpu_s))  # RLIMIT_CPU counts whole seconds; we check the exact value after
    memory = limits.memory_mb * MB
    return [
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={memory}",
        f"--stack={memory}",  # deep recursion may use all of the memory limit, as judges allow
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_size_mb * MB}",
        f"--nofile={limits.open_files}",
        "--core=0",
    ]


class ProcessSandbox(Sandbox):
    name = "process"

    def __init__(self) -> None:
        missing = [tool for tool in ("bwrap", "prlimit") if shutil.which(tool) is None]
        if missing:
            raise SandboxUnavailable(
                f"process sandbox needs {' and '.join(missing)}: run `bash scripts/sandbox-tools.sh` "
                "(installs Debian's bubblewrap and util-linux)"
            )
        self._fs_args = _filesystem_args()

    def has_tool(self, tool: str) -> bool:
        return shutil.which(tool, path=SANDBOX_PATH) is not None  # the sandbox sees the host's /usr

    def command(
        self, ws: Workspace, argv: Sequence[str], limits: Limits, status_fd: int, report: str
    ) -> list[str]:
        """The full host command line for one run (public for inspection and debugging)."""
        network = (
            ["--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"] if limits.network else []
        )
        return [
            "prlimit", *_rlimit_args(limits), "--",
            "bwrap",
            "--unshare-all", "--unshare-user", *network, "--disable-userns",
            "--die-with-parent", "--new-session",
            "--uid", "1000", "--gid", "1000", "--hostname", "sandbox",
            *self._fs_args,
            "--proc", "/proc",
            # Scratch space is tmpfs (memory), so each piece gets a size cap; /dev itself is read-only.
            "--dev", "/dev", "--size", str(SHM_SIZE_MB * MB), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--size", str(TMP_SIZE_MB * MB), "--tmpfs", "/tmp",
            "--bind", str(ws.path), WORK_MOUNT, "--bind", str(ws.meta), META_MOUNT, "--chdir", WORK_MOUNT,
            "--remount-ro", "/",  # the new root is a tmpfs: without this, writable and unbounded
            "--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", WORK_MOUNT,
            "--setenv", "LANG", "C.UTF-8",
            "--json-status-fd", str(status_fd),
            "--", *usage.timed(argv, report),
        ]  # fmt: skip

    def run_in(
        self, ws: Workspace, argv: Sequence[str], *, stdin: bytes = b"", limits: Limits = DEFAULT_LIMITS
    ) -> RunResult:
        if not argv:
            raise ValueError("argv must name a program")
        report_host, report_inside = ws.report_file()
        status_r, status_w = os.pipe()
        as_user = {"user": ws.uid, "group": ws.gid, "extra_groups": []} if os.geteuid() == 0 else {}
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                self.command(ws, argv, limits, status_w, report_inside),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={}, cwd=ws.path, pass_fds=(status_w,), process_group=0, **as_user,
            )  # fmt: skip
        except OSError as exc:
            os.close(status_r)
            return sandbox_error(f"could not start the sandbox: {exc}")
        finally:
            os.close(status_w)

        output = BoundedOutput(limits.output_bytes)
        reason = pump(proc.stdin, proc.stdout, proc.stderr, stdin, output, start + limits.wall_s)
        if reason == "eof" and not wait_until(lambda: proc.poll() is not None, start + limits.wall_s):
            reason = "deadline"
        at_kill = None
        if proc.returncode is None:
            at_kill = _usage_of_uid(ws.uid)  # what it had used when we stopped it
            # Killing bwrap kills the sandbox: its pid 1 has SIGKILL as parent-death signal.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        events = _read_status(status_r)
        if "child-pid" not in events:
            return sandbox_error(
                f"bwrap failed to start the program: {output.stderr.decode(errors='replace')}"
            )
        # bwrap returns as soon as it knows the exit status; the sandbox's pid 1 may still be exiting.
        # Its exit completes only after the kernel has killed and reaped everything in its namespace.
        _wait_until_dead(events["child-pid"], ws.uid)
        wall = time.monotonic() - start
        report = usage.parse(report_host.read_text(errors="replace")) if report_host.exists() else None
        report_host.unlink(missing_ok=True)
        if report is None:  # killed before GNU time could report
            report = usage.Usage(None, signal.SIGKILL, *(at_kill or (0.0, 0.0)))
        return RunResult(
            status=classify(
                limits=limits, exit_code=report.exit_code, signum=report.signal, stderr=bytes(output.stderr),
                cpu_s=report.cpu_s, max_rss_mb=report.max_rss_mb, wall_exceeded=reason == "deadline",
                output_exceeded=reason == "output",
            ),
            exit_code=report.exit_code, signal=report.signal, stdout=bytes(output.stdout),
            stderr=bytes(output.stderr), wall_s=wall, cpu_s=report.cpu_s, max_rss_mb=report.max_rss_mb,
            truncated=output.truncated,
        )  # fmt: skip


def _read_status(fd: int) -> dict:
    """bwrap's --json-status-fd: {"child-pid": N} once the program started, {"exit-code": N} at its end."""
    with os.fdopen(fd, "rb") as fh:
        os.set_blocking(fd, False)
        raw = fh.read() or b""
    events: dict = {}
    decoder = json.JSONDecoder()
    text, pos = raw.decode(errors="replace"), 0
    while (pos := _skip_space(text, pos)) < len(text):
        obj, pos = decoder.raw_decode(text, pos)
        events.update(obj)
    return events


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _wait_until_dead(pid: int, uid: int, timeout: float = 10.0) -> None:
    def dead() -> bool:
        try:
            st = _proc_status(str(pid))
        except (FileNotFoundError, ProcessLookupError):
            return True
        # A zombie is dead; a pid reused since would not run as the run's uid (leased to us alone).
        return st["State"].startswith(("Z", "X")) or int(st["Uid"].split()[0]) != uid

    if not wait_until(dead, time.monotonic() + timeout):
        os.kill(pid, signal.SIGKILL)  # should never be needed: the namespace dies with bwrap


def _proc_status(pid: str) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


def live_pids_of_uid(uid: int) -> list[int]:
    """Processes of a uid that are not yet dead. Zombies count as dead: the sandbox's pid 1 becomes one
    when we kill its parent, and whoever inherits it (init) reaps it in its own time."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            st = _proc_status(name)
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(st["Uid"].split()[0]) == uid and not st["State"].startswith(("Z", "X")):
            pids.append(int(name))
    return pids


def _usage_of_uid(uid: int) -> tuple[float, float] | None:
    """CPU seconds and peak RSS (MB) of the run's processes right now, from /proc (root only)."""
    if os.geteuid() != 0:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    cpu, rss = 0.0, 0.0
    for pid in live_pids_of_uid(uid):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            rss = max(rss, int(_proc_status(str(pid)).get("VmHWM", "0 kB").split()[0]) / 1024)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return cpu, rss
