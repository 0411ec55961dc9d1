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
"""

from __future__ import annotations

import math
import signal
import threading
import time
import uuid
from collections.abc import Sequence

from sandboxes import usage
from sandboxes.base import Sandbox, SandboxUnavailable
from sandboxes.capture import BoundedOutput
from sandboxes.classify import classify, sandbox_error
from sandboxes.images import ensure_image
from sandboxes.limits import DEFAULT_LIMITS, Limits, RunResult
from sandboxes.workspace import META_MOUNT, WORK_MOUNT, Workspace

TMP_SIZE_MB = 64
LABEL = "m1.sandbox"


class DockerSandbox(Sandbox):
    name = "docker"

    def __init__(self, image: str | None = None, cpp: bool = True) -> None:
        import docker

        try:
            self.client = docker.from_env(timeout=60)
            self.client.ping()
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(
                f"Docker engine not reachable ({exc}); start it with `bash scripts/docker-engine.sh`"
            ) from None
        self.image = image or ensure_image(self.client, cpp=cpp)
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
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={TMP_SIZE_MB}m"},
            mem_limit=memory,
            memswap_limit=memory,  # equal: no swap, the limit is real memory
            pids_limit=limits.processes,
            nano_cpus=1_000_000_000,
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
            labels={LABEL: str(ws.uid)},  # which run a container belongs to
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
        output = BoundedOutput(limits.output_bytes)
        try:
            container = self._create(ws, command, limits)
        except docker.errors.DockerException as exc:
            return sandbox_error(f"could not create the container: {exc}")
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
            try:
                container.remove(force=True)  # kills whatever is left and frees the container
            except docker.errors.NotFound:
                pass
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
