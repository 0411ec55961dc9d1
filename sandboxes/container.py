"""Docker sandbox: one short-lived container per run on the local engine, through the docker SDK.

A stronger wall than the process sandbox, at the cost of a container start per run:
- no network (network mode "none": only a private loopback);
- read-only root filesystem from our own debootstrapped image; writable are only the work dir
  (/work), the sandbox's report dir (/run/m1) and a size-capped private tmpfs at /tmp;
- the run's own unprivileged uid, all capabilities dropped, no-new-privileges, Docker's default
  seccomp profile;
- cgroup limits: memory (swap included, so the OOM killer strikes at the limit) and pids (fork
  bombs), one CPU; rlimits for CPU time, file size and open files, no core dumps;
- docker-init as pid 1 (reaps orphans; the run ends when the program's supervisor ends);
- output read from the attach stream with a byte cap; at the wall deadline or the cap the container
  is killed, and it is always removed, so nothing of the run survives it.

A caller that is interrupted still leaves nothing behind: each live container is registered, and
`cleanup_on_signals` (SIGINT/SIGTERM) and an atexit hook kill and remove them; a container whose
caller was killed outright (SIGKILL) ends by itself at its wall deadline (`timeout` inside it) and
is removed by the next `reap_orphans` on the engine, which knows its owner's pid from a label.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sandboxes import needs, usage
from sandboxes.base import Sandbox, SandboxUnavailable
from sandboxes.capture import BoundedOutput
from sandboxes.classify import classify, sandbox_error
from sandboxes.images import ensure_image
from sandboxes.limits import DEFAULT_LIMITS, Limits, RunResult
from sandboxes.workspace import META_MOUNT, WORK_MOUNT, Workspace

TMP_SIZE_MB = 64
LABEL = "m1.sandbox"
OWNER_LABEL = "m1.owner"  # "<boot id>:<pid>" of the process that created the container
BACKSTOP_S = 30  # the in-container deadline trails the caller's by this much


def engine():
    """A client of the local Docker engine, or SandboxUnavailable saying how to start it."""
    needs.use(needs.DOCKER_ENGINE)
    return connect()


def connect():
    """`engine` without reporting a use (sandboxes.prerequisites checks the engine with it)."""
    import docker

    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(
            f"Docker engine not reachable ({exc}); start it with `bash scripts/docker-engine.sh`"
        ) from None
    return client


class DockerSandbox(Sandbox):
    """Runs in `image` (default: the debootstrap base image). `tmpfs` adds size-capped private
    mounts beside /tmp, e.g. ``{"/testbed": 256}`` for a work tree that a run copies in and changes."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        cpp: bool = True,
        *,
        client=None,
        tmpfs: Mapping[str, int] | None = None,
        cpus: float = 1.0,
    ) -> None:
        self.client = client or engine()
        self.image = image or ensure_image(self.client, cpp=cpp)
        self.tmpfs = {"/tmp": TMP_SIZE_MB, **(tmpfs or {})}
        self.cpus = cpus
        self._tools: dict[str, bool] = {}

    def has_tool(self, tool: str) -> bool:
        if tool not in self._tools:
            out = self.client.containers.run(
                self.image, ["sh", "-c", f"command -v {tool} || true"], network_mode="none", remove=True
            )
            self._tools[tool] = bool(out.strip())
        return self._tools[tool]

    def _create(self, ws: Workspace, command: list[str], limits: Limits):
        from docker.types import LogConfig, Ulimit

        cpu = max(1, math.ceil(limits.cpu_s))
        memory = f"{limits.memory_mb}m"
        return self.client.containers.create(
            self.image,
            command,
            user=f"{ws.uid}:{ws.gid}",
            working_dir=WORK_MOUNT,
            hostname="sandbox",
            network_mode="none" if not limits.network else "bridge",
            read_only=True,
            volumes={
                str(ws.path): {"bind": WORK_MOUNT, "mode": "rw"},
                str(ws.meta): {"bind": META_MOUNT, "mode": "rw"},
            },
            tmpfs={path: f"rw,nosuid,nodev,size={mb}m" for path, mb in self.tmpfs.items()},
            mem_limit=memory,
            memswap_limit=memory,  # equal: no swap, the limit is real memory
            pids_limit=limits.processes,
            nano_cpus=int(self.cpus * 1_000_000_000),
            ulimits=[
                Ulimit(name="cpu", soft=cpu, hard=cpu + 1),
                Ulimit(name="fsize", soft=limits.file_size_mb << 20, hard=limits.file_size_mb << 20),
                Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                Ulimit(name="core", soft=0, hard=0),
            ],
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ipc_mode="private",
            init=True,
            log_config=LogConfig(type="none"),  # output comes through the capped attach stream only
            labels={LABEL: str(ws.uid), OWNER_LABEL: _OWNER},  # which run and process it belongs to
        )

    def run_in(
        self, ws: Workspace, argv: Sequence[str], *, stdin: bytes = b"", limits: Limits = DEFAULT_LIMITS
    ) -> RunResult:
        import docker.errors
        import requests.exceptions

        if not argv:
            raise ValueError("argv must name a program")
        run_id = uuid.uuid4().hex
        stdin_file = ws.meta / f"stdin-{run_id}"
        stdin_file.write_bytes(stdin)
        report_host, report_inside = ws.report_file()
        # stdin is a file the program reads from; `exec` makes the program GNU time's direct child.
        shell = f'exec "$@" < {META_MOUNT}/{stdin_file.name}'
        command = usage.timed(["/bin/sh", "-c", shell, "sh", *argv], report_inside)
        # The backstop: should this process die without removing the container, it still ends.
        command = ["timeout", "-s", "KILL", str(math.ceil(limits.wall_s) + BACKSTOP_S), *command]
        output = BoundedOutput(limits.output_bytes)
        try:
            container = self._create(ws, command, limits)
        except docker.errors.DockerException as exc:
            stdin_file.unlink(missing_ok=True)  # a later run in this work dir must not see this input
            return sandbox_error(f"could not create the container: {exc}")
        _live[container.id] = container
        try:
            stream = container.attach(stdout=True, stderr=True, stream=True, demux=True, logs=False)
            over_cap = threading.Event()
            reader = threading.Thread(target=_read, args=(stream, output, over_cap, container), daemon=True)
            reader.start()
            container.start()
            start = time.monotonic()
            deadline_hit = False
            try:
                container.wait(timeout=limits.wall_s)
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):  # wall deadline
                deadline_hit = True
                _kill(container)
                container.wait(timeout=30)
            wall = time.monotonic() - start
            reader.join(timeout=10)
            container.reload()
            oom_killed = bool(container.attrs["State"].get("OOMKilled"))
        except docker.errors.DockerException as exc:
            return sandbox_error(f"the container failed: {exc}")
        finally:
            _remove(container)  # kills whatever is left and frees the container
            stdin_file.unlink(missing_ok=True)

        report = usage.parse(report_host.read_text(errors="replace")) if report_host.exists() else None
        report_host.unlink(missing_ok=True)
        if report is None:  # killed before GNU time could report
            report = usage.Usage(None, signal.SIGKILL, 0.0, 0.0)
        return RunResult(
            status=classify(
                limits=limits, exit_code=report.exit_code, signum=report.signal, stderr=bytes(output.stderr),
                cpu_s=report.cpu_s, max_rss_mb=report.max_rss_mb, wall_exceeded=deadline_hit,
                output_exceeded=over_cap.is_set(), oom_killed=oom_killed,
            ),
            exit_code=report.exit_code, signal=report.signal, stdout=bytes(output.stdout),
            stderr=bytes(output.stderr), wall_s=wall, cpu_s=report.cpu_s, max_rss_mb=report.max_rss_mb,
            truncated=output.truncated,
        )  # fmt: skip


def _read(stream, output: BoundedOutput, over_cap: threading.Event, container) -> None:
    """Collect the demultiplexed attach stream; stop the container once the output cap is exceeded.

    Reading goes on (discarding) until the stream ends: the engine only lets the container exit once
    its output is consumed, so a reader that stopped would leave the kill waiting forever.
    """
    for out, err in stream:
        for name, chunk in (("stdout", out), ("stderr", err)):
            if chunk and not over_cap.is_set() and not output.add(name, chunk):
                over_cap.set()
                threading.Thread(target=_kill, args=(container,), daemon=True).start()


def _kill(container) -> None:
    import docker.errors

    try:
        container.kill()
    except docker.errors.APIError:  # already exited
        pass


# -- containers of this process: removed on SIGINT/SIGTERM and at exit, orphans reaped later --------------


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown-boot"


_OWNER = f"{_boot_id()}:{os.getpid()}"
_live: dict[str, object] = {}  # container id -> container, while a run holds it


def _remove(container) -> None:
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: removal already in progress (another thread)
            raise
    finally:
        _live.pop(container.id, None)


def remove_live() -> int:
    """Kill and remove every container this process is running now; returns how many."""
    import docker.errors

    count = 0
    for container in list(_live.values()):
        try:
            _remove(container)
            count += 1
        except docker.errors.DockerException:
            pass
    return count


def _at_exit() -> None:
    if _live:
        remove_live()


atexit.register(_at_exit)


def _fork_reset() -> None:
    global _OWNER
    _OWNER = f"{_boot_id()}:{os.getpid()}"
    _live.clear()  # the parent's containers are the parent's to remove


os.register_at_fork(after_in_child=_fork_reset)


@contextlib.contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM first remove this process's live containers (so worker
    threads waiting on them return at once), then raise KeyboardInterrupt in the main thread.

    Use it around batch work in a command's main thread; elsewhere it does nothing (Python only
    lets the main thread set signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        remove_live()
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie answers signal 0 too: a killed owner stays one until its parent (or, orphaned, pid 1)
    # reaps it, which a container's pid 1 may never do.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def reap_orphans(client) -> int:
    """Remove sandbox containers whose owning process is gone (killed before it could remove
    them, or from before a reboot); returns how many."""
    import docker.errors

    boot = _boot_id()
    count = 0
    # ignore_removed: a container that exits and is removed between the listing and its inspection
    for container in client.containers.list(all=True, filters={"label": OWNER_LABEL}, ignore_removed=True):
        owner_boot, _, pid = container.labels.get(OWNER_LABEL, "").rpartition(":")
        if owner_boot == boot and pid.isdigit() and _alive(int(pid)):
            continue
        try:
            container.remove(force=True)
            count += 1
        except docker.errors.DockerException:
            pass
    return count
